//! Tests that need something outside the test process — a PostgreSQL server, a
//! real Keystone, a real Neutron — and learn where it is from an environment
//! variable.
//!
//! libtest has no skip decided at run time: a `#[test]` that returns early
//! because its variable is unset counts as passed. So these tests live in test
//! targets with `harness = false`, whose `main` hands [`Trial`]s to
//! `libtest-mimic`: a trial made by [`needs`] runs with the variable's value, and
//! without it reports itself `ignored (NETCACHE_TEST_PG_URL is not set)`, counted
//! in the closing `… passed; … failed; N ignored` line, never as passed.
//!
//! CI's tiers that provide an environment set [`REQUIRE_VAR`]`=1`: a missing
//! variable is then a failure, so a tier cannot go green having skipped what it
//! exists to run. A test whose environment only changes what it runs against (an
//! end-to-end scenario against the embedded Neutron, or a real one) asks
//! [`optional`], which also fails under [`REQUIRE_VAR`].
//!
//! Beside them, what tests of several crates share: [`poll`] (the one bounded
//! wait), [`json`] (a JSON answer's lists), [`log`] (the log a test's thread
//! writes) and [`disk`] (a disk that fills up).

pub mod disk;
pub mod json;
pub mod log;
pub mod poll;

use std::future::Future;
use std::process::ExitCode;

pub use libtest_mimic::Trial;
use libtest_mimic::{Arguments, Completion, Failed};

/// The variable that turns a missing environment into a failure (`1`).
pub const REQUIRE_VAR: &str = "NETCACHE_TEST_REQUIRE_ENV";
/// A PostgreSQL server's admin URL (`postgres://postgres@127.0.0.1:5432/postgres`);
/// tests create scratch databases on it.
pub const PG_URL: &str = "NETCACHE_TEST_PG_URL";
/// A real Keystone's v3 URL (started by `scripts/keystone.sh`).
pub const KEYSTONE_URL: &str = "NETCACHE_TEST_KEYSTONE_URL";

/// Whether this run must have every environment its tests ask for.
#[must_use]
pub fn required() -> bool {
    std::env::var(REQUIRE_VAR).is_ok_and(|v| v == "1")
}

/// The value of `var`; `None` when it is unset, which fails the calling test
/// when [`REQUIRE_VAR`] is set.
///
/// # Panics
/// When `var` is unset and [`REQUIRE_VAR`] is `1`.
#[must_use]
pub fn optional(var: &str) -> Option<String> {
    let value = std::env::var(var).ok();
    assert!(value.is_some() || !required(), "{}", missing(var));
    value
}

fn missing(var: &str) -> String {
    format!("{var} is not set, and {REQUIRE_VAR}=1 requires it")
}

/// A trial that needs `var`: `body` runs with its value; without it the trial is
/// ignored, or fails when [`REQUIRE_VAR`] is set. A panic in `body` fails it.
pub fn needs<F>(name: impl Into<String>, var: &'static str, body: F) -> Trial
where
    F: FnOnce(String) + Send + 'static,
{
    Trial::ignorable_test(name, move || judge(var, std::env::var(var).ok(), required(), body))
}

/// What a trial that needs `var` comes to, given its value and whether the run
/// requires it.
fn judge<F: FnOnce(String)>(var: &str, value: Option<String>, required: bool, body: F) -> Result<Completion, Failed> {
    match value {
        Some(value) => {
            body(value);
            Ok(Completion::Completed)
        }
        None if required => Err(Failed::from(missing(var))),
        None => Ok(Completion::ignored_with(format!("{var} is not set"))),
    }
}

/// [`needs`] for an async test, run as
/// `#[tokio::test(flavor = "multi_thread", worker_threads = 2)]` runs it.
pub fn needs_async<F, Fut>(name: impl Into<String>, var: &'static str, test: F) -> Trial
where
    F: FnOnce(String) -> Fut + Send + 'static,
    Fut: Future<Output = ()>,
{
    needs(name, var, move |value| block_on_threads(2, test(value)))
}

/// `needs_env!(PG_URL, area::test)`: the trial `area::test` of
/// `async fn test(value: String)` in module `area`, which needs the variable
/// (see [`needs_async`]).
#[macro_export]
macro_rules! needs_env {
    ($var:expr, $module:ident :: $test:ident) => {
        $crate::needs_async(
            concat!(stringify!($module), "::", stringify!($test)),
            $var,
            $module::$test,
        )
    };
}

/// A trial that needs nothing outside the process.
pub fn plain<F>(name: impl Into<String>, body: F) -> Trial
where
    F: FnOnce() + Send + 'static,
{
    Trial::test(name, move || {
        body();
        Ok(())
    })
}

/// Runs `future` to completion on a runtime of its own, as `#[tokio::test]` does
/// (one thread).
///
/// # Panics
/// When the runtime cannot be built.
pub fn block_on<F: Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// Runs `future` on a runtime of `workers` threads, as
/// `#[tokio::test(flavor = "multi_thread", worker_threads = N)]` does.
///
/// # Panics
/// When the runtime cannot be built.
pub fn block_on_threads<F: Future>(workers: usize, future: F) -> F::Output {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(workers)
        .enable_all()
        .build()
        .expect("a tokio runtime")
        .block_on(future)
}

/// The `main` of a `harness = false` test target: runs `trials` with libtest's
/// command line (filters, `--test-threads`, `--list`, `--nocapture` …).
#[must_use]
pub fn run(trials: Vec<Trial>) -> ExitCode {
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

#[cfg(test)]
mod tests {
    use libtest_mimic::{Arguments, Conclusion, Trial};

    use super::judge;

    /// Runs one trial needing `VAR` (with `value`) through the harness, one thread,
    /// its report to /dev/null (a `test result:` line of its own would read as
    /// this binary's).
    fn conclusion(value: Option<&str>, required: bool) -> Conclusion {
        let value = value.map(str::to_owned);
        let trial = Trial::ignorable_test("needs_var", move || {
            judge("VAR", value, required, |v| assert_eq!(v, "here"))
        });
        let args = Arguments {
            test_threads: Some(1),
            logfile: Some("/dev/null".to_owned()),
            ..Arguments::default()
        };
        libtest_mimic::run(&args, vec![trial])
    }

    #[test]
    fn a_missing_variable_is_counted_ignored_never_passed() {
        let c = conclusion(None, false);
        assert_eq!((c.num_passed, c.num_failed, c.num_ignored), (0, 0, 1));
        assert!(!c.has_failed());
    }

    #[test]
    fn a_missing_variable_fails_a_run_that_requires_it() {
        let c = conclusion(None, true);
        assert_eq!((c.num_passed, c.num_failed, c.num_ignored), (0, 1, 0));
        assert!(c.has_failed());
        let Err(failed) = judge("VAR", None, true, |_| {}) else {
            panic!("a required variable that is missing passed")
        };
        assert_eq!(
            failed.message(),
            Some("VAR is not set, and NETCACHE_TEST_REQUIRE_ENV=1 requires it")
        );
    }

    #[test]
    fn a_set_variable_runs_the_test_with_its_value() {
        for required in [false, true] {
            let c = conclusion(Some("here"), required);
            assert_eq!((c.num_passed, c.num_failed, c.num_ignored), (1, 0, 0));
        }
        let c = conclusion(Some("elsewhere"), false);
        assert_eq!(
            (c.num_passed, c.num_failed, c.num_ignored),
            (0, 1, 0),
            "the body's panic fails it"
        );
    }
}
