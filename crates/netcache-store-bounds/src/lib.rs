//! `#[sql_bounds(DB)]`: the where-clause netcache-store's generic statements
//! need, written once.
//!
//! The engine's SQL is generic over the database (SQLite, PostgreSQL), and sqlx
//! states per database what binds and decodes: `String: Encode<'q, DB>` and the
//! like. Rust does not imply such bounds from a trait's where-clause, so every
//! impl of the engine would spell the whole list out again. This attribute
//! appends the list to the impl's where-clause (creating it if there is none),
//! with `DB` the database type the attribute names (`DB`, or `B::Db` for an impl
//! over a backend).

use proc_macro::TokenStream;
use proc_macro2::{Delimiter, TokenStream as Tokens, TokenTree};
use quote::quote;

#[proc_macro_attribute]
pub fn sql_bounds(database: TokenStream, item: TokenStream) -> TokenStream {
    let db: Tokens = database.into();
    let mut tokens: Vec<TokenTree> = Tokens::from(item).into_iter().collect();
    let Some(TokenTree::Group(body)) = tokens.pop().filter(is_body) else {
        return quote! { compile_error!("#[sql_bounds] goes on an impl block"); }.into();
    };
    let has_where = tokens.iter().any(|t| matches!(t, TokenTree::Ident(i) if i == "where"));
    let ends_with_comma = matches!(tokens.last(), Some(TokenTree::Punct(p)) if p.as_char() == ',');
    let joint = match (has_where, ends_with_comma) {
        (false, _) => quote! { where },
        (true, false) => quote! { , },
        (true, true) => quote! {},
    };
    let head: Tokens = tokens.into_iter().collect();
    quote! {
        #head #joint
            #db: crate::dialect::Dialect,
            for<'c> &'c mut <#db as ::sqlx::Database>::Connection: ::sqlx::Executor<'c, Database = #db>,
            <#db as ::sqlx::Database>::Arguments: ::sqlx::IntoArguments<#db>,
            for<'s> &'s str: ::sqlx::ColumnIndex<<#db as ::sqlx::Database>::Row> + ::sqlx::Encode<'s, #db>,
            str: ::sqlx::Type<#db>,
            String: ::sqlx::Type<#db> + for<'q> ::sqlx::Encode<'q, #db> + for<'r> ::sqlx::Decode<'r, #db>,
            i64: ::sqlx::Type<#db> + for<'q> ::sqlx::Encode<'q, #db> + for<'r> ::sqlx::Decode<'r, #db>,
            bool: ::sqlx::Type<#db> + for<'q> ::sqlx::Encode<'q, #db> + for<'r> ::sqlx::Decode<'r, #db>,
            for<'s> Option<&'s str>: ::sqlx::Encode<'s, #db>,
            Option<String>: for<'q> ::sqlx::Encode<'q, #db>,
            Option<i64>: for<'q> ::sqlx::Encode<'q, #db>,
            Option<<#db as crate::dialect::Dialect>::Ts>: for<'q> ::sqlx::Encode<'q, #db>,
            Option<<#db as crate::dialect::Dialect>::Uuid>: for<'q> ::sqlx::Encode<'q, #db>,
        #body
    }
    .into()
}

fn is_body(token: &TokenTree) -> bool {
    matches!(token, TokenTree::Group(g) if g.delimiter() == Delimiter::Brace)
}
