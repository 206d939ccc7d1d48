//! oslo.db's connection strings as sqlx's connect options, and the read-only
//! pools built from them.

use std::str::FromStr;
use std::time::Duration;

use sqlx::Executor;
use sqlx::mysql::{MySqlConnectOptions, MySqlPool, MySqlPoolOptions};
use url::Url;

use crate::{Error, Result};

/// Connections per cell: the audit reads one page at a time.
const MAX_CONNECTIONS: u32 = 2;

/// Run on each new connection: every transaction of the session is read-only,
/// and repeatable read, so that `WITH CONSISTENT SNAPSHOT` takes a snapshot
/// even where the server's default isolation is `READ-COMMITTED`.
pub(super) const SESSION: &str = "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ ONLY";

/// sqlx's options from a `mysql://` URL, or oslo.db's `mysql+pymysql://` (any
/// `mysql+driver` or `mariadb` scheme). Of the query, only what sqlx knows
/// and means the same is kept: the TLS and socket options, under sqlx's names or
/// PyMySQL's (whose `ssl_ca` asks for a verified server: sqlx's `VERIFY_CA`,
/// not its default of TLS when offered). The rest — `charset=utf8` (sqlx's
/// `utf8mb4` reads what utf8 holds), `plugin=dbcounter`, `read_default_file` … —
/// is dropped.
///
/// Errors show the URL with its password as `****`.
pub(super) fn connect_options(connection: &str) -> Result<MySqlConnectOptions> {
    if connection.contains('{') {
        return Err(Error::Config(format!(
            "{} is a template Nova fills from its own configuration; give the database's URL",
            redacted_text(connection)
        )));
    }
    let mut url = Url::parse(connection).map_err(|e| Error::Config(format!("a database URL: {e}")))?;
    let scheme = url.scheme().to_owned();
    let dialect = scheme
        .split_once('+')
        .map_or(scheme.as_str(), |(dialect, _driver)| dialect);
    if dialect != "mysql" && dialect != "mariadb" {
        return Err(Error::Config(format!(
            "{}: Nova's databases are read over MySQL (mysql:// or mysql+pymysql://), not {scheme}",
            redacted(&url)
        )));
    }
    url.set_scheme("mysql")
        .map_err(|()| Error::Config(format!("{}: not a database URL", redacted(&url))))?;

    let mut kept: Vec<(&'static str, String)> = Vec::new();
    let mut ssl_mode = None;
    let mut wants_tls = false;
    for (key, value) in url.query_pairs() {
        let key = match &*key {
            "ssl-mode" | "sslmode" => {
                ssl_mode = Some(value.into_owned());
                continue;
            }
            "ssl-ca" | "sslca" | "ssl_ca" => "ssl-ca",
            "ssl-cert" | "sslcert" | "ssl_cert" => "ssl-cert",
            "ssl-key" | "sslkey" | "ssl_key" => "ssl-key",
            "socket" | "unix_socket" => "socket",
            _ => continue,
        };
        wants_tls |= key != "socket";
        kept.push((key, value.into_owned()));
    }
    if let Some(mode) = ssl_mode {
        kept.push(("ssl-mode", mode));
    } else if wants_tls {
        kept.push(("ssl-mode", "VERIFY_CA".to_owned()));
    }
    url.set_query(None);
    if !kept.is_empty() {
        url.query_pairs_mut().extend_pairs(&kept);
    }

    MySqlConnectOptions::from_str(url.as_str()).map_err(|e| Error::Config(format!("{}: {e}", redacted(&url))))
}

/// A pool of at most [`MAX_CONNECTIONS`] read-only sessions, one connection
/// opened now (a wrong URL or password fails here, naming the cell).
pub(super) async fn read_only_pool(cell: &str, options: MySqlConnectOptions) -> Result<MySqlPool> {
    let label = cell.to_owned();
    MySqlPoolOptions::new()
        .max_connections(MAX_CONNECTIONS)
        .min_connections(0)
        .acquire_timeout(Duration::from_secs(30))
        .idle_timeout(Duration::from_secs(60))
        .after_connect(move |conn, _meta| {
            let label = label.clone();
            Box::pin(async move {
                metrics::counter!("netcache_nova_db_queries_total", "cell" => label).increment(1);
                conn.execute(SESSION).await?;
                Ok(())
            })
        })
        .connect_with(options)
        .await
        .map_err(|source| Error::Database {
            cell: cell.to_owned(),
            source,
        })
}

/// `url` with its password as `****`.
fn redacted(url: &Url) -> String {
    let mut shown = url.clone();
    if shown.password().is_some() {
        let _ = shown.set_password(Some("****"));
    }
    shown.to_string()
}

/// A connection string that does not parse as a URL, its password as `****`
/// (what is between `user:` and the last `@` of the authority).
fn redacted_text(text: &str) -> String {
    let Some((scheme, rest)) = text.split_once("://") else {
        return "a database URL".to_owned();
    };
    let authority_end = rest.find('/').unwrap_or(rest.len());
    let (authority, path) = rest.split_at(authority_end);
    match authority.rsplit_once('@') {
        Some((user_info, host)) => {
            let user = user_info.split_once(':').map_or(user_info, |(user, _password)| user);
            let hidden = if user_info.contains(':') { ":****" } else { "" };
            format!("{scheme}://{user}{hidden}@{host}{path}")
        }
        None => text.to_owned(),
    }
}

/// Whether `error` is MySQL's "table doesn't exist" (1146).
pub(super) fn no_such_table(error: &sqlx::Error) -> bool {
    error
        .as_database_error()
        .and_then(|e| e.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
        .is_some_and(|e| e.number() == 1146)
}

#[cfg(test)]
mod tests {
    use sqlx::mysql::MySqlSslMode;

    use super::*;

    #[test]
    fn oslo_pymysql_urls_lose_their_driver_and_the_options_sqlx_does_not_share() {
        let o = connect_options("mysql+pymysql://nova:s3cret@db.example:3307/nova_cell1?charset=utf8&plugin=dbcounter")
            .unwrap();
        assert_eq!(o.get_host(), "db.example");
        assert_eq!(o.get_port(), 3307);
        assert_eq!(o.get_username(), "nova");
        assert_eq!(o.get_database(), Some("nova_cell1"));
        assert_eq!(o.get_charset(), "utf8mb4", "charset=utf8 is not passed on");
        assert!(matches!(o.get_ssl_mode(), MySqlSslMode::Preferred));

        let o = connect_options("mysql://root@127.0.0.1/nova").unwrap();
        assert_eq!((o.get_username(), o.get_port()), ("root", 3306));
    }

    #[test]
    fn pymysql_tls_options_ask_for_a_verified_server() {
        let o = connect_options("mysql+pymysql://nova:pw@db/nova?ssl_ca=/etc/ca.pem&charset=utf8").unwrap();
        assert!(matches!(o.get_ssl_mode(), MySqlSslMode::VerifyCa));
        let o = connect_options("mysql://nova:pw@db/nova?ssl-ca=/etc/ca.pem&ssl-mode=VERIFY_IDENTITY").unwrap();
        assert!(matches!(o.get_ssl_mode(), MySqlSslMode::VerifyIdentity));
        let o = connect_options("mysql+pymysql://nova:pw@localhost/nova?unix_socket=/run/mysqld/mysqld.sock").unwrap();
        assert_eq!(
            o.get_socket().map(|p| p.to_string_lossy().into_owned()).as_deref(),
            Some("/run/mysqld/mysqld.sock")
        );
        assert!(matches!(o.get_ssl_mode(), MySqlSslMode::Preferred));
    }

    #[test]
    fn other_databases_and_templates_are_refused_without_showing_a_password() {
        let e = connect_options("postgresql+psycopg2://nova:s3cret@db/nova")
            .unwrap_err()
            .to_string();
        assert!(e.contains("postgresql+psycopg2") && !e.contains("s3cret"), "{e}");
        let e = connect_options("{scheme}://nova:s3cret@{hostname}/nova_cell1?{query}")
            .unwrap_err()
            .to_string();
        assert!(e.contains("template") && !e.contains("s3cret"), "{e}");
        let e = connect_options("not a url").unwrap_err().to_string();
        assert!(e.contains("database URL"), "{e}");
    }

    #[test]
    fn redaction_hides_only_the_password() {
        let url = Url::parse("mysql://nova:s3cret@db:3306/nova").unwrap();
        assert_eq!(redacted(&url), "mysql://nova:****@db:3306/nova");
        assert_eq!(
            redacted_text("{scheme}://nova:p@ss@{hostname}/nova"),
            "{scheme}://nova:****@{hostname}/nova"
        );
        assert_eq!(redacted_text("mysql://db/nova"), "mysql://db/nova");
    }
}
