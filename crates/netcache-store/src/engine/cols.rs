//! Typed access to a row's columns, whatever the backend.

use std::fmt::Display;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::{ColumnIndex, Database, Decode, Row, Type};
use uuid::Uuid;

use crate::Error;
use crate::Result;
use crate::dialect::Dialect;

/// Typed access to a row's columns; every failure names the column.
pub(super) struct Cols<'r, DB: Database>(pub(super) &'r DB::Row);

impl<'r, DB> Cols<'r, DB>
where
    DB: Dialect,
    for<'s> &'s str: ColumnIndex<DB::Row>,
    String: Type<DB> + for<'d> Decode<'d, DB>,
{
    pub(super) fn get<T: Decode<'r, DB> + Type<DB>>(&self, column: &'static str) -> Result<T> {
        self.0.try_get(column).map_err(|e| corrupt(column, e))
    }

    pub(super) fn ts(&self, column: &'static str) -> Result<DateTime<Utc>> {
        DB::from_ts(self.get(column)?).map_err(|e| corrupt(column, e))
    }

    pub(super) fn ts_opt(&self, column: &'static str) -> Result<Option<DateTime<Utc>>> {
        let value: Option<DB::Ts> = self.get(column)?;
        value.map(DB::from_ts).transpose().map_err(|e| corrupt(column, e))
    }

    pub(super) fn uuid(&self, column: &'static str) -> Result<Uuid> {
        DB::from_uuid(self.get(column)?).map_err(|e| corrupt(column, e))
    }

    pub(super) fn uuid_opt(&self, column: &'static str) -> Result<Option<Uuid>> {
        let value: Option<DB::Uuid> = self.get(column)?;
        value.map(DB::from_uuid).transpose().map_err(|e| corrupt(column, e))
    }

    pub(super) fn parse<T: FromStr<Err: Display>>(&self, column: &'static str) -> Result<T> {
        self.get::<String>(column)?.parse().map_err(|e| corrupt(column, e))
    }

    pub(super) fn parse_opt<T: FromStr<Err: Display>>(&self, column: &'static str) -> Result<Option<T>> {
        let value: Option<String> = self.get(column)?;
        value.map(|v| v.parse()).transpose().map_err(|e| corrupt(column, e))
    }

    pub(super) fn json<T>(&self, column: &'static str, read: fn(&str) -> serde_json::Result<T>) -> Result<T> {
        read(&self.get::<String>(column)?).map_err(|e| corrupt(column, e))
    }

    pub(super) fn json_opt<T>(
        &self,
        column: &'static str,
        read: fn(&str) -> serde_json::Result<T>,
    ) -> Result<Option<T>> {
        let value: Option<String> = self.get(column)?;
        value.map(|v| read(&v)).transpose().map_err(|e| corrupt(column, e))
    }

    /// An integer column read into a narrower (or unsigned) domain type.
    pub(super) fn narrow<T: TryFrom<i64>>(&self, column: &'static str, value: i64) -> Result<T> {
        T::try_from(value).map_err(|_| corrupt(column, format!("{value} is out of range")))
    }
}

pub(crate) fn corrupt(column: &str, error: impl Display) -> Error {
    Error::Corrupt(format!("column {column}: {error}"))
}
