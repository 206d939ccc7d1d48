//! Secrets kept out of log lines and `Debug` output: the password of a URL
//! (the database's, `postgres://user:****@host/db`, or its `password=` query
//! parameter) and the services' passwords and secrets in the settings.

use std::fmt;

use url::Url;

use super::{AuthSettings, NeutronSettings, Settings};

/// What a secret is shown as.
const HIDDEN: &str = "****";

/// `url` with its password, if it has one, shown as `****`; a text that is not
/// a URL but has user information (`…://user:pass@…`) loses all of it.
#[must_use]
pub fn url(url: &str) -> String {
    let Ok(mut parsed) = Url::parse(url) else {
        return match (url.find("://"), url.rfind('@')) {
            (Some(scheme), Some(at)) if at > scheme => format!("{}{HIDDEN}{}", &url[..scheme + 3], &url[at..]),
            _ => url.to_owned(),
        };
    };
    let mut redacted = false;
    if parsed.password().is_some() {
        redacted = parsed.set_password(Some(HIDDEN)).is_ok();
    }
    if parsed.query_pairs().any(|(key, _)| key == "password") {
        let pairs: Vec<(String, String)> = parsed
            .query_pairs()
            .map(|(key, value)| {
                let value = if key == "password" { HIDDEN.into() } else { value };
                (key.into_owned(), value.into_owned())
            })
            .collect();
        parsed.query_pairs_mut().clear().extend_pairs(pairs);
        redacted = true;
    }
    if redacted { parsed.to_string() } else { url.to_owned() }
}

/// A secret, if set, as `****`.
fn secret(value: Option<&String>) -> Option<&'static str> {
    value.map(|_| HIDDEN)
}

impl fmt::Debug for Settings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Every field, by name: one added to the struct must be added here.
        let Self {
            listen,
            database,
            api,
            auth,
            neutron,
            compute,
            heal,
            gc,
            retention,
            operations,
            quota,
            nova,
            policy,
        } = self;
        f.debug_struct("Settings")
            .field("listen", listen)
            .field("database", &url(database))
            .field("api", api)
            .field("auth", auth)
            .field("neutron", neutron)
            .field("compute", compute)
            .field("heal", heal)
            .field("gc", gc)
            .field("retention", retention)
            .field("operations", operations)
            .field("quota", quota)
            .field("nova", nova)
            .field("policy", policy)
            .finish()
    }
}

impl fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            strategy,
            auth_url,
            username,
            password,
            project_name,
            user_domain_name,
            project_domain_name,
            cache_ttl,
            allow_noauth_on_public,
        } = self;
        f.debug_struct("AuthSettings")
            .field("strategy", strategy)
            .field("auth_url", &auth_url.as_deref().map(url))
            .field("username", username)
            .field("password", &secret(password.as_ref()))
            .field("project_name", project_name)
            .field("user_domain_name", user_domain_name)
            .field("project_domain_name", project_domain_name)
            .field("cache_ttl", cache_ttl)
            .field("allow_noauth_on_public", allow_noauth_on_public)
            .finish()
    }
}

impl fmt::Debug for NeutronSettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Self {
            url: neutron_url,
            timeout,
            retries,
            auth_url,
            username,
            password,
            user_domain_name,
            project_name,
            project_domain_name,
            application_credential_id,
            application_credential_secret,
            region,
            interface,
            embedded_listen,
        } = self;
        f.debug_struct("NeutronSettings")
            .field("url", &neutron_url.as_deref().map(url))
            .field("timeout", timeout)
            .field("retries", retries)
            .field("auth_url", &auth_url.as_deref().map(url))
            .field("username", username)
            .field("password", &secret(password.as_ref()))
            .field("user_domain_name", user_domain_name)
            .field("project_name", project_name)
            .field("project_domain_name", project_domain_name)
            .field("application_credential_id", application_credential_id)
            .field(
                "application_credential_secret",
                &secret(application_credential_secret.as_ref()),
            )
            .field("region", region)
            .field("interface", interface)
            .field("embedded_listen", embedded_listen)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_urls_password_is_hidden_and_the_rest_kept() {
        assert_eq!(
            url("postgres://netcache:s3cr%40t@db.example:5432/netcache?sslmode=require"),
            "postgres://netcache:****@db.example:5432/netcache?sslmode=require"
        );
        assert_eq!(
            url("postgresql://db.example/netcache?user=netcache&password=s3cret"),
            "postgresql://db.example/netcache?user=netcache&password=****"
        );
        for kept in [
            "sqlite:netcache.db",
            "sqlite::memory:",
            "postgres://postgres@127.0.0.1:5432/postgres",
        ] {
            assert_eq!(url(kept), kept);
        }
        // Not a URL the parser takes, but a password in it all the same.
        assert_eq!(url("postgres://u:s3cret@[bad/db"), "postgres://****@[bad/db");
    }

    /// Settings in `Debug` (as a panic or a `?settings` field would print them)
    /// show no password or secret, and show what was set otherwise.
    #[test]
    fn settings_in_debug_show_no_password() {
        let mut settings = Settings {
            database: "postgres://netcache:db-s3cret@db.example/netcache".to_owned(),
            ..Settings::default()
        };
        settings.auth.password = Some("keystone-s3cret".to_owned());
        settings.neutron.password = Some("neutron-s3cret".to_owned());
        settings.neutron.application_credential_secret = Some("appcred-s3cret".to_owned());
        settings.neutron.url = Some("http://neutron:url-s3cret@neutron.example:9696".to_owned());
        for shown in [format!("{settings:?}"), format!("{settings:#?}")] {
            assert!(!shown.contains("s3cret"), "{shown}");
            assert!(
                shown.contains("postgres://netcache:****@db.example/netcache"),
                "{shown}"
            );
            assert!(shown.contains("neutron.example:9696"), "{shown}");
            assert!(shown.contains("max_attempts"), "{shown}");
        }
    }
}
