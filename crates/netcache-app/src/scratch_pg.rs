//! A scratch PostgreSQL database per run (chaos, bench, tests): created on the
//! server of an admin URL, dropped (with any connections still open to it) at the end.

use anyhow::Context;
use sqlx::{AssertSqlSafe, Connection, PgConnection};

pub struct ScratchDatabase {
    admin_url: String,
    pub name: String,
    pub url: String,
}

impl ScratchDatabase {
    /// `CREATE DATABASE netcache_<label>_<pid>` (`label`: letters, digits, `_`).
    pub async fn create(admin_url: &str, label: &str) -> anyhow::Result<Self> {
        let name = format!("netcache_{label}_{}", std::process::id());
        let mut admin = PgConnection::connect(admin_url)
            .await
            .with_context(|| format!("cannot connect to {admin_url}"))?;
        sqlx::raw_sql(AssertSqlSafe(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)")))
            .execute(&mut admin)
            .await?;
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .with_context(|| format!("cannot create database {name}"))?;
        admin.close().await.ok();
        let mut url = url::Url::parse(admin_url).context("--database is not a URL")?;
        url.set_path(&name);
        Ok(Self {
            admin_url: admin_url.to_owned(),
            name,
            url: url.into(),
        })
    }

    /// `ANALYZE`, as an operator runs it after a bulk import: a server with
    /// autovacuum off would otherwise plan the loaded tables without statistics.
    pub async fn analyze(&self) -> anyhow::Result<()> {
        let mut connection = PgConnection::connect(&self.url).await?;
        sqlx::raw_sql("ANALYZE").execute(&mut connection).await?;
        connection.close().await.ok();
        Ok(())
    }

    pub async fn drop_database(&self) -> anyhow::Result<()> {
        let mut admin = PgConnection::connect(&self.admin_url).await?;
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )))
        .execute(&mut admin)
        .await?;
        admin.close().await.ok();
        Ok(())
    }
}
