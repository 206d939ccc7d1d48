//! Where the conformance cases run: SQLite in a temp file and in memory always,
//! PostgreSQL when `NETCACHE_TEST_PG_URL` names a server (one scratch database per
//! case, dropped afterwards, so runs and cases never see each other's rows). Each
//! case is a trial per backend, `CASE::sqlite_file`, `CASE::sqlite_memory` and
//! `CASE::postgres`; without `NETCACHE_TEST_PG_URL` the last is reported ignored.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use netcache_store::Store;
use netcache_testenv::{PG_URL, Trial, block_on, needs, plain};
use sqlx::{AssertSqlSafe, Connection, PgConnection};
use tempfile::TempDir;

#[derive(Clone, Debug)]
pub enum Target {
    SqliteFile,
    SqliteMemory,
    Postgres { admin_url: String },
}

/// A case as the trials call it.
pub type Case = for<'a> fn(&'a Db) -> Pin<Box<dyn Future<Output = ()> + 'a>>;

/// The trials of one case: one per backend.
pub fn trials(name: &str, case: Case) -> [Trial; 3] {
    [
        plain(format!("{name}::sqlite_file"), move || run(&Target::SqliteFile, case)),
        plain(format!("{name}::sqlite_memory"), move || {
            run(&Target::SqliteMemory, case);
        }),
        needs(format!("{name}::postgres"), PG_URL, move |admin_url| {
            run(&Target::Postgres { admin_url }, case);
        }),
    ]
}

fn run(target: &Target, case: Case) {
    block_on(async {
        let db = Db::create(target).await;
        case(&db).await;
    });
}

/// A fresh, migrated database and a store open on it.
pub struct Db {
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
                    store: open(&url).await,
                    url: Some(url),
                    _dir: Some(dir),
                    _scratch: None,
                }
            }
            Target::SqliteMemory => Self {
                store: open("sqlite::memory:").await,
                url: None,
                _dir: None,
                _scratch: None,
            },
            Target::Postgres { admin_url } => {
                let scratch = ScratchDatabase::create(admin_url).await;
                let url = scratch.url.clone();
                Self {
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
            .unwrap_or_else(|e| panic!("connect to {PG_URL}: {e}"));
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

/// Declares `cases()`: each case a trial per backend (see [`trials`]).
macro_rules! conformance {
    ($($case:ident),+ $(,)?) => {
        fn cases() -> Vec<netcache_testenv::Trial> {
            let mut trials = Vec::new();
            $({
                fn case(db: &harness::Db) -> std::pin::Pin<Box<dyn std::future::Future<Output = ()> + '_>> {
                    Box::pin(cases::$case(db))
                }
                trials.extend(harness::trials(stringify!($case), case));
            })+
            trials
        }
    };
}
pub(crate) use conformance;
