//! SSH key pairs (Nova's os-keypairs): public keys a user names, to be put on the
//! servers that user boots. A key pair belongs to one user; its name is unique
//! among that user's.

use chrono::{DateTime, Utc};

/// A key pair as recorded: never the private half (a generated one is handed
/// to the caller once and forgotten).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyPair {
    pub user_id: String,
    pub name: String,
    /// OpenSSH form: `ssh-rsa AAAA… comment`.
    pub public_key: String,
    /// Nova's: MD5 of the key blob, colon-separated lowercase hex.
    pub fingerprint: String,
    pub key_type: KeyType,
    pub created_at: DateTime<Utc>,
}

/// What a key pair holds (Nova's `type`, from microversion 2.2): an SSH
/// public key, or an X.509 certificate (PEM).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum KeyType {
    #[default]
    Ssh,
    X509,
}

impl KeyType {
    /// Nova's name, as stored and shown.
    #[must_use]
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Ssh => "ssh",
            Self::X509 => "x509",
        }
    }
}

impl std::str::FromStr for KeyType {
    type Err = String;

    fn from_str(name: &str) -> Result<Self, String> {
        match name {
            "ssh" => Ok(Self::Ssh),
            "x509" => Ok(Self::X509),
            other => Err(format!("no key pair type {other:?}")),
        }
    }
}

/// Why a new key pair's name is refused (Nova's reasons, in its words), or
/// `Ok` for 1 to 255 characters of letters, digits, space, `_` and `-`, and
/// `@` and `.` too where `at_and_dot` (Nova's rule from microversion 2.92).
pub fn check_name(name: &str, at_and_dot: bool) -> Result<(), &'static str> {
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-') || (at_and_dot && matches!(c, '@' | '.')))
    {
        return Err("Keypair name contains unsafe characters");
    }
    if name.is_empty() || name.len() > 255 {
        return Err("Keypair name must be string and between 1 and 255 characters long");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{KeyType, check_name};

    #[test]
    fn names_are_checked_as_nova_checks_them() {
        for good in ["k", "my key_1-2", &"x".repeat(255), " padded "] {
            assert_eq!(check_name(good, false), Ok(()), "{good:?}");
        }
        let unsafe_chars = Err("Keypair name contains unsafe characters");
        for bad in ["a/b", "ключ", "tab\there", "dot.ted", "me@host", "* BAD *"] {
            assert_eq!(check_name(bad, false), unsafe_chars, "{bad:?}");
        }
        let length = Err("Keypair name must be string and between 1 and 255 characters long");
        assert_eq!(check_name("", false), length);
        assert_eq!(check_name(&"x".repeat(256), false), length);
    }

    #[test]
    fn from_2_92_names_may_hold_at_signs_and_dots() {
        for good in ["dot.ted", "me@host.example", "k"] {
            assert_eq!(check_name(good, true), Ok(()), "{good:?}");
        }
        for bad in ["a/b", "* BAD *", "a:b"] {
            assert_eq!(
                check_name(bad, true),
                Err("Keypair name contains unsafe characters"),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn key_types_read_back_as_written() {
        for t in [KeyType::Ssh, KeyType::X509] {
            assert_eq!(t.as_str().parse::<KeyType>(), Ok(t));
        }
        assert!("rsa".parse::<KeyType>().is_err());
    }
}
