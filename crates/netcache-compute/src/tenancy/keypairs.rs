//! Key pairs (Nova's os-keypairs): a user's named SSH public keys or x509
//! certificates, imported or generated here. A generated private key goes to
//! the caller once and is never stored.

use std::fmt::Write as _;

use async_trait::async_trait;
use md5::{Digest, Md5};
use netcache_domain::change::Change;
use netcache_domain::keypair::{self, KeyPair, KeyType};
use netcache_store::StoredKeyPair;
use rsa::pkcs1::{EncodeRsaPrivateKey, LineEnding};
use rsa::traits::PublicKeyParts;
use ssh_key::public::{KeyData, RsaPublicKey};
use ssh_key::{Algorithm, Mpint, PublicKey};
use tracing::info;

use crate::tenancy::x509;
use crate::{Compute, Error, RequestContext, Result};

/// Nova generates RSA keys of this size.
const GENERATED_KEY_BITS: usize = 2048;

/// Nova's comment on the public half of a key pair it generated.
const GENERATED_KEY_COMMENT: &str = "Generated-by-Nova";

/// A key pair just created, with the private half if it was generated here.
#[derive(Debug)]
pub struct NewKeyPair {
    pub keypair: KeyPair,
    /// As Nova answers it: PKCS#1 PEM (`-----BEGIN RSA PRIVATE KEY-----`) for
    /// ssh, base64 of a PKCS#12 bundle with an empty password for x509.
    pub private_key: Option<String>,
}

/// What a create asks for: a key pair of `user_id` (the caller's, or another
/// user's where an admin names one), imported from `public_key` or generated.
#[derive(Debug)]
pub struct KeyPairRequest<'a> {
    pub user_id: &'a str,
    pub name: &'a str,
    pub public_key: Option<String>,
    pub key_type: KeyType,
    /// Nova's name rule from microversion 2.92 (`@` and `.` allowed).
    pub names_with_at_and_dot: bool,
}

/// Nova's os-keypairs: a user's key pairs.
#[async_trait]
pub trait KeyPairOps: Send + Sync {
    /// The key pairs of `user_id`, by name.
    async fn keypairs(&self, user_id: &str) -> Result<Vec<StoredKeyPair>>;

    /// One of the key pairs of `user_id`.
    async fn keypair(&self, user_id: &str, name: &str) -> Result<StoredKeyPair>;

    /// Imports `public_key` (OpenSSH form, or a PEM certificate for `x509`)
    /// under `name`, or generates an RSA key pair (for `x509`, in a
    /// certificate) when there is none. Nova's checks, in its order: the name
    /// (400), the quota `key_pairs` of the caller's project for that user
    /// (403, checked again as the key pair is recorded), a key that is not of
    /// its type (400), a name the user has already (409).
    async fn create_keypair(&self, ctx: &RequestContext, request: KeyPairRequest<'_>) -> Result<NewKeyPair>;

    /// Deletes one of the key pairs of `user_id`.
    async fn delete_keypair(&self, user_id: &str, name: &str) -> Result<()>;
}

#[async_trait]
impl KeyPairOps for Compute {
    async fn keypairs(&self, user_id: &str) -> Result<Vec<StoredKeyPair>> {
        Ok(self.store.keypairs(user_id).await?)
    }

    async fn keypair(&self, user_id: &str, name: &str) -> Result<StoredKeyPair> {
        self.store
            .keypair(user_id, name)
            .await?
            .ok_or_else(|| not_found(user_id, name))
    }

    async fn create_keypair(&self, ctx: &RequestContext, request: KeyPairRequest<'_>) -> Result<NewKeyPair> {
        let KeyPairRequest {
            user_id,
            name,
            public_key,
            key_type,
            names_with_at_and_dot,
        } = request;
        keypair::check_name(name, names_with_at_and_dot).map_err(|reason| Error::InvalidKeypair(reason.to_owned()))?;
        let claim = self.claim_keypair(ctx, user_id).await?;
        let (public_key, private_key) = match (public_key, key_type) {
            (Some(public_key), _) => (public_key, None),
            // Generating an RSA key takes a while: off the async workers.
            (None, KeyType::Ssh) => {
                let (public_key, private_key) = tokio::task::spawn_blocking(generate)
                    .await
                    .map_err(|e| Error::KeyGeneration(e.to_string()))??;
                (public_key, Some(private_key))
            }
            // Nova's WinRM client certificate, with its key in PKCS#12.
            (None, KeyType::X509) => {
                let user_id = user_id.to_owned();
                let (public_key, private_key) = tokio::task::spawn_blocking(move || x509::generate(&user_id))
                    .await
                    .map_err(|e| Error::KeyGeneration(e.to_string()))??;
                (public_key, Some(private_key))
            }
        };
        let fingerprint = match key_type {
            KeyType::Ssh => fingerprint(&public_key)?,
            KeyType::X509 => x509_fingerprint(&public_key)?,
        };
        let keypair = KeyPair {
            user_id: user_id.to_owned(),
            name: name.to_owned(),
            fingerprint,
            public_key,
            key_type,
            created_at: self.clock.now(),
        };
        self.commit(vec![claim, Change::InsertKeyPair(keypair.clone())])
            .await
            .map_err(|e| match e {
                Error::Store(s) if s.is_conflict() => Error::KeypairExists(name.to_owned()),
                other => other,
            })?;
        info!(user.id = %user_id, keypair.name = %name, "Created key pair {name:?} of user {user_id}");
        Ok(NewKeyPair { keypair, private_key })
    }

    async fn delete_keypair(&self, user_id: &str, name: &str) -> Result<()> {
        let delete = Change::DeleteKeyPair {
            user_id: user_id.to_owned(),
            name: name.to_owned(),
        };
        self.commit(vec![delete]).await.map_err(|e| match e {
            Error::Store(netcache_store::Error::NotFound(_)) => not_found(user_id, name),
            other => other,
        })?;
        info!(user.id = %user_id, keypair.name = %name, "Deleted key pair {name:?} of user {user_id}");
        Ok(())
    }
}

impl Compute {
    /// Nova's check of a boot's `key_name`: one of the caller's key pairs.
    pub(crate) async fn check_key_name(&self, ctx: &RequestContext, key_name: &str) -> Result<()> {
        match self.store.keypair(&ctx.user_id, key_name).await? {
            Some(_) => Ok(()),
            None => Err(Error::InvalidKeyName),
        }
    }
}

fn not_found(user_id: &str, name: &str) -> Error {
    Error::KeypairNotFound {
        name: name.to_owned(),
        user_id: user_id.to_owned(),
    }
}

/// Nova's fingerprint of an OpenSSH public key: MD5 of the key blob,
/// colon-separated lowercase hex. Anything but an RSA, DSA, ECDSA or Ed25519
/// public key in OpenSSH form is refused with Nova's reason.
fn fingerprint(public_key: &str) -> Result<String> {
    let invalid = || Error::InvalidKeypair("failed to generate fingerprint".to_owned());
    let key = PublicKey::from_openssh(public_key.trim()).map_err(|_| invalid())?;
    if !matches!(
        key.algorithm(),
        Algorithm::Rsa { .. } | Algorithm::Dsa | Algorithm::Ecdsa { .. } | Algorithm::Ed25519
    ) {
        return Err(invalid());
    }
    let blob = key.to_bytes().map_err(|_| invalid())?;
    Ok(colon_hex(&Md5::digest(&blob)))
}

/// Nova's fingerprint of an X.509 certificate (PEM): SHA-1 of its DER,
/// colon-separated lowercase hex. Anything but one PEM `CERTIFICATE` holding
/// a DER certificate's outline (to-be-signed part, algorithm, signature) is
/// refused with Nova's reason.
pub(crate) fn x509_fingerprint(pem: &str) -> Result<String> {
    use der::{Decode as _, Reader as _};
    let invalid = |why: &dyn std::fmt::Display| {
        Error::InvalidKeypair(format!("failed to generate X509 fingerprint. Error message: {why}"))
    };
    let (label, der) = pem_rfc7468::decode_vec(pem.trim().as_bytes()).map_err(|e| invalid(&e))?;
    if label != "CERTIFICATE" {
        return Err(invalid(&format!("a PEM {label}, not a CERTIFICATE")));
    }
    let certificate = der::asn1::AnyRef::from_der(&der).map_err(|e| invalid(&e))?;
    certificate
        .sequence(|reader| {
            let _to_be_signed: der::asn1::SequenceRef<'_> = reader.decode()?;
            let _algorithm: der::asn1::SequenceRef<'_> = reader.decode()?;
            let _signature: der::asn1::BitStringRef<'_> = reader.decode()?;
            Ok(())
        })
        .map_err(|e: der::Error| invalid(&e))?;
    Ok(colon_hex(&sha1::Sha1::digest(&der)))
}

/// `aa:bb:…`, as Nova prints a digest.
pub(crate) fn colon_hex(digest: &[u8]) -> String {
    let mut hex = String::with_capacity(digest.len() * 3);
    for (i, byte) in digest.iter().enumerate() {
        if i > 0 {
            hex.push(':');
        }
        let _ = write!(hex, "{byte:02x}");
    }
    hex
}

/// A new RSA key pair: the public half in OpenSSH form, the private half in
/// PKCS#1 PEM (what Nova's generated keys look like).
fn generate() -> Result<(String, String)> {
    let failed = |e: &dyn std::fmt::Display| Error::KeyGeneration(e.to_string());
    let private = rsa::RsaPrivateKey::new(&mut rsa::rand_core::OsRng, GENERATED_KEY_BITS).map_err(|e| failed(&e))?;
    let mpint = |n: &rsa::BigUint| Mpint::from_positive_bytes(&n.to_bytes_be()).map_err(|e| failed(&e));
    let key_data = KeyData::Rsa(RsaPublicKey {
        e: mpint(private.e())?,
        n: mpint(private.n())?,
    });
    let public = PublicKey::new(key_data, GENERATED_KEY_COMMENT)
        .to_openssh()
        .map_err(|e| failed(&e))?;
    let pem = private.to_pkcs1_pem(LineEnding::LF).map_err(|e| failed(&e))?;
    Ok((public, pem.as_str().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Made with `ssh-keygen -t rsa -b 2048` and `-t ed25519`; the fingerprints
    // are `ssh-keygen -l -E md5`'s.
    const RSA: &str = "ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCiaM+xl25Iv6Ja3cVo9zQEIiUS3Pftke5Vh0qHbNHYWz2J14sTW2TIaiWbjjC5Far2pH2s+4SQIU6JdOZbsjXMxkfyh9ERS9pMnrcTJKSV+7X+mAFEM7IBByDfLy5dz/5ay8UPQrGsnjW7ufI8MO6r4arawDNMI+2fTlK6mKsiW67w6grRz49L69uscCYMSNV48qAu62UZeZCbjZ4sasMLptl/UP6QUJ76jdfu/ZIU6BpCQt8j7iRJNe7f41h/g4myEIBKE6jFkiJX434Leq/W8WyLJ9EeEIiBh91IrjfOFPRHRtQxX5rV7Kejm77tSJBRORPWNI+uZVJxnv4uf+fb fixture@netcache";
    const ED25519: &str =
        "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAINABGpOwjISXlBZnPqjbkUMUVZSjlmmqNCvvgcBwsU1J fixture@netcache";

    #[test]
    fn fingerprints_are_md5_of_the_key_blob_as_ssh_keygen_gives_them() {
        assert_eq!(
            fingerprint(RSA).unwrap(),
            "fe:5b:92:0c:25:d3:e6:c8:fc:10:18:48:eb:dd:43:0d"
        );
        assert_eq!(
            fingerprint(&format!("{ED25519}\n")).unwrap(),
            "9d:26:20:4a:ed:e4:65:93:f9:b7:2c:be:64:68:3e:3c"
        );
        // Tempest's default key type.
        let ecdsa = "ecdsa-sha2-nistp384 AAAAE2VjZHNhLXNoYTItbmlzdHAzODQAAAAIbmlzdHAzODQAAABhBF+Hixeg71LObZGzJKBWjFgIRhNNg/oQzwQmqGCRUX2abXQ/bOECIs6LRxfs4UDWFwjt9Bve+oCOcaKuqRyJMwPv7+yu975bK+EuIuR0DAYwNsPaupNOGRhokOZDUpRNPQ== tempest";
        assert_eq!(
            fingerprint(ecdsa).unwrap(),
            "b5:7c:b3:e8:6d:5d:74:fb:4f:8b:1e:d2:09:7c:13:ff"
        );
        let no_comment = ED25519.rsplit_once(' ').unwrap().0;
        assert_eq!(fingerprint(no_comment).unwrap(), fingerprint(ED25519).unwrap());
    }

    #[test]
    fn what_is_not_an_openssh_public_key_is_refused() {
        let truncated = &ED25519[..ED25519.len() - 30];
        let mislabelled = ED25519.replacen("ssh-ed25519", "ssh-rsa", 1);
        for bad in [
            "",
            "not a key",
            "ssh-rsa",
            "ssh-rsa not-base64!",
            truncated,
            &mislabelled,
            "-----BEGIN PUBLIC KEY-----",
        ] {
            match fingerprint(bad) {
                Err(Error::InvalidKeypair(reason)) => assert_eq!(reason, "failed to generate fingerprint"),
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    // Made with `openssl req -x509 -newkey ec`; the fingerprint is
    // `openssl x509 -fingerprint -sha1`'s.
    const CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----\nMIIBizCCATGgAwIBAgIUXDUVmGqSx66mjHoF5bNUIYy8LiAwCgYIKoZIzj0EAwIw\nGzEZMBcGA1UEAwwQbmV0Y2FjaGUtZml4dHVyZTAeFw0yNjEyMDUwMTM5MzJaFw0z\nNjEyMDIwMTM5MzJaMBsxGTAXBgNVBAMMEG5ldGNhY2hlLWZpeHR1cmUwWTATBgcq\nhkjOPQIBBggqhkjOPQMBBwNCAATiEMPfN5LrOcppQb9w3uqPPcI7ge3mMOG6wzWL\naYP4aCJEimsrn9BsUXNW4+JNWJTND3n1DzV2PTCIYeQFdhMUo1MwUTAdBgNVHQ4E\nFgQUYOSGPvlF/yt4enyZC/CG8KeaFLwwHwYDVR0jBBgwFoAUYOSGPvlF/yt4enyZ\nC/CG8KeaFLwwDwYDVR0TAQH/BAUwAwEB/zAKBggqhkjOPQQDAgNIADBFAiAwXjyy\npmwuUcImhYs7BpDEn6vrZ80pAYjxnVE7h1oiewIhAKShYZqs20GY7xSabhyEaxvo\nvHqQyNBWuE63qZCyiLZT\n-----END CERTIFICATE-----";

    #[test]
    fn x509_fingerprints_are_sha1_of_the_certificates_der() {
        assert_eq!(
            x509_fingerprint(CERTIFICATE).unwrap(),
            "e2:ff:54:99:fe:78:d2:52:22:06:62:6e:29:c3:ff:83:21:dc:33:1a"
        );
        assert_eq!(
            x509_fingerprint(&format!("{CERTIFICATE}\n")).unwrap(),
            x509_fingerprint(CERTIFICATE).unwrap()
        );
    }

    #[test]
    fn what_is_not_a_pem_certificate_is_refused() {
        let not_a_certificate = CERTIFICATE.replace("CERTIFICATE", "PUBLIC KEY");
        let body_lines: Vec<&str> = CERTIFICATE.lines().collect();
        let truncated = [&body_lines[..3], &body_lines[body_lines.len() - 1..]]
            .concat()
            .join("\n");
        for bad in ["", RSA, &not_a_certificate, &truncated] {
            match x509_fingerprint(bad) {
                Err(Error::InvalidKeypair(reason)) => {
                    assert!(
                        reason.starts_with("failed to generate X509 fingerprint. Error message: "),
                        "{reason}"
                    );
                }
                other => panic!("{bad:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn a_generated_key_pair_is_rsa_in_novas_forms() {
        let (public, private) = generate().unwrap();
        let parsed = PublicKey::from_openssh(&public).unwrap();
        assert_eq!(parsed.algorithm(), Algorithm::Rsa { hash: None });
        assert_eq!(parsed.comment(), "Generated-by-Nova");
        let KeyData::Rsa(rsa) = parsed.key_data() else {
            panic!("{public}")
        };
        assert_eq!(rsa.n.as_positive_bytes().unwrap().len() * 8, GENERATED_KEY_BITS);
        assert!(private.starts_with("-----BEGIN RSA PRIVATE KEY-----\n"), "{private}");
        assert!(private.trim_end().ends_with("-----END RSA PRIVATE KEY-----"));
        fingerprint(&public).unwrap();
    }
}
