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
    pub created_at: DateTime<Utc>,
}

/// Why a new key pair's name is refused (Nova's reasons, in its words), or
/// `Ok` for 1 to 255 characters of letters, digits, space, `_` and `-`.
pub fn check_name(name: &str) -> Result<(), &'static str> {
    if !name
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || matches!(c, ' ' | '_' | '-'))
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
    use super::check_name;

    #[test]
    fn names_are_checked_as_nova_checks_them() {
        for good in ["k", "my key_1-2", &"x".repeat(255), " padded "] {
            assert_eq!(check_name(good), Ok(()), "{good:?}");
        }
        let unsafe_chars = Err("Keypair name contains unsafe characters");
        for bad in ["a/b", "ключ", "tab\there", "dot.ted", "* BAD *"] {
            assert_eq!(check_name(bad), unsafe_chars, "{bad:?}");
        }
        let length = Err("Keypair name must be string and between 1 and 255 characters long");
        assert_eq!(check_name(""), length);
        assert_eq!(check_name(&"x".repeat(256)), length);
    }
}
