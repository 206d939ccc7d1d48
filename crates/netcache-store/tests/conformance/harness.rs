//! Where the conformance cases run: SQLite in a temp file and in memory always,
//! PostgreSQL when `NETCACHE_TEST_PG_URL` names a server (one scratch database per
//! case, dropped afterwards, so runs and cases never see each other's rows).

use std::sync::Arc;

use netcache_store::Store;
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use tempfile::TempDir;

pub const PG_URL_VAR: &str = "NETCACHE_TEST_PG_URL";

#[derive(Clone, Debug)]
pub enum Target {
    SqliteFile,
    SqliteMemory,
    Postgres { admin_url: String },
}

/// Every backend this run can test.
pub fn targets() -> Vec<Target> {
    let mut targets = vec![Target::SqliteFile, Target::SqliteMemory];
    if let Ok(admin_url) = std::env::var(PG_URL_VAR) {
        targets.push(Target::Postgres { admin_url });
    }
    targets
}

/// A fresh, migrated database and a store open on it.
pub struct Db {
    pub name: &'static str,
    pub store: Arc<dyn Store>,
    /// The URL to open the same database again (`None` for `sqlite::memory:`, which
    /// lives only as long as its one connection).
    url: Option<String>,
    _dir: Option<TempDir>,
    _scratch: Option<ScratchDatabase>,
}

impl Db {
    pub async fn create(target: &Target) -> Self {
        match target {
            Target::SqliteFile => {
                let dir = tempfile::tempdir().expect("temp dir");
                let url = format!("sqlite:{}", dir.path().join("netcache.db").display());
                Self {
                    name: "sqlite-file",
                    store: open(&url).await,
                    url: Some(url),
                    _dir: Some(dir),
                    _scratch: None,
                }
            }
            Target::SqliteMemory => Self {
                name: "sqlite-memory",
                store: open("sqlite::memory:").await,
                url: None,
                _dir: None,
                _scratch: None,
            },
            Target::Postgres { admin_url } => {
                let scratch = ScratchDatabase::create(admin_url).await;
                let url = scratch.url.clone();
                Self {
                    name: "postgres",
                    store: open(&url).await,
                    url: Some(url),
                    _dir: None,
                    _scratch: Some(scratch),
                }
            }
        }
    }

    /// Another store on the same database, as a restarted (or second) process
    /// would open it; `None` when the database cannot outlive its store.
    pub async fn reopen(&self) -> Option<Arc<dyn Store>> {
        match &self.url {
            Some(url) => Some(open(url).await),
            None => None,
        }
    }

    pub fn url(&self) -> Option<&str> {
        self.url.as_deref()
    }
}

async fn open(url: &str) -> Arc<dyn Store> {
    netcache_store::open(url)
        .await
        .unwrap_or_else(|e| panic!("open {url}: {e}"))
}

/// `CREATE DATABASE netcache_test_<random>` on the server of `admin_url`, dropped
/// (with any connections still open to it) when this value is.
struct ScratchDatabase {
    admin_url: String,
    name: String,
    url: String,
}

impl ScratchDatabase {
    async fn create(admin_url: &str) -> Self {
        let name = format!("netcache_test_{}", &uuid::Uuid::new_v4().simple().to_string()[..16]);
        let mut admin = PgConnection::connect(admin_url)
            .await
            .unwrap_or_else(|e| panic!("connect to {PG_URL_VAR}: {e}"));
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create scratch database");
        admin.close().await.ok();
        let mut url = url::Url::parse(admin_url).expect("NETCACHE_TEST_PG_URL is a URL");
        url.set_path(&name);
        Self {
            admin_url: admin_url.to_owned(),
            name,
            url: url.into(),
        }
    }
}

impl Drop for ScratchDatabase {
    fn drop(&mut self) {
        let admin_url = self.admin_url.clone();
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        // Drop runs inside the test's runtime: drop the database from a thread of
        // its own, and wait for it.
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                let mut admin = PgConnection::connect(&admin_url).await?;
                sqlx::raw_sql(AssertSqlSafe(sql)).execute(&mut admin).await?;
                admin.close().await
            })
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("could not drop scratch database {}: {dropped:?}", self.name);
        }
    }
}

/// Declares one `#[tokio::test]` per case, each running the case on every target
/// in turn. A failure's output names the target it failed on.
macro_rules! conformance {
    ($($case:ident),+ $(,)?) => {$(
        #[tokio::test]
        async fn $case() {
            for target in harness::targets() {
                let db = harness::Db::create(&target).await;
                eprintln!("--- {} on {}", stringify!($case), db.name);
                cases::$case(&db).await;
            }
        }
    )+};
}
pub(crate) use conformance;
