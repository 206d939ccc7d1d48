//! Nova's generated x509 key pair (`nova.crypto.generate_winrm_x509_cert`): a
//! self-signed WinRM client certificate for the user, and its private key with
//! the certificate in a PKCS#12 bundle under an empty password.

use std::time::{Duration, SystemTime};

use base64ct::{Base64, Encoding as _};
use cms::content_info::ContentInfo;
use der::asn1::{Any, BitString, OctetString, SetOfVec, UtcTime, Utf8StringRef};
use der::oid::db::{rfc4519, rfc5280, rfc5911, rfc5912};
use der::oid::{AssociatedOid as _, ObjectIdentifier};
use der::pem::LineEnding;
use der::{Decode as _, Encode as _, EncodePem as _, Tag};
use pkcs12::kdf::{Pkcs12KeyType, derive_key_utf8};
use pkcs12::{digest_info::DigestInfo, mac_data::MacData, pfx::Pfx, safe_bag::SafeBag};
use rsa::pkcs1v15::SigningKey;
use rsa::pkcs8::{EncodePrivateKey as _, EncodePublicKey as _};
use rsa::rand_core::{OsRng, RngCore as _};
use rsa::signature::{SignatureEncoding as _, Signer as _};
use sha2::{Digest as _, Sha256};
use x509_cert::attr::{Attribute, AttributeTypeAndValue};
use x509_cert::certificate::{Certificate, TbsCertificate, Version};
use x509_cert::ext::Extension;
use x509_cert::ext::pkix::name::{GeneralName, OtherName};
use x509_cert::ext::pkix::{ExtendedKeyUsage, SubjectAltName};
use x509_cert::name::{Name, RdnSequence, RelativeDistinguishedName};
use x509_cert::serial_number::SerialNumber;
use x509_cert::spki::{AlgorithmIdentifierOwned, SubjectPublicKeyInfoOwned};
use x509_cert::time::{Time, Validity};

use crate::{Error, Result};

/// Nova's RSA key size and certificate lifetime (`openssl req -days 3650`).
const KEY_BITS: usize = 2048;
const VALID_FOR: Duration = Duration::from_secs(3650 * 24 * 60 * 60);

/// Microsoft's user principal name, the otherName WinRM maps to a user.
const UPN: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.3.6.1.4.1.311.20.2.3");

/// PKCS#9 localKeyId: ties the key bag to its certificate's bag.
const LOCAL_KEY_ID: ObjectIdentifier = ObjectIdentifier::new_unwrap("1.2.840.113549.1.9.21");

/// OpenSSL's MAC iterations for `pkcs12 -export`.
const MAC_ITERATIONS: i32 = 2048;

/// A new x509 key pair of `user_id`: the certificate in PEM (its public half)
/// and base64 of the PKCS#12 bundle (its private half), as Nova answers them.
pub(crate) fn generate(user_id: &str) -> Result<(String, String)> {
    let failed = |e: &dyn std::fmt::Display| Error::KeyGeneration(e.to_string());
    let private = rsa::RsaPrivateKey::new(&mut OsRng, KEY_BITS).map_err(|e| failed(&e))?;
    let certificate = certificate(&private, user_id).map_err(|e| failed(&e))?;
    let pem = certificate.to_pem(LineEnding::LF).map_err(|e| failed(&e))?;
    let key_der = private.to_pkcs8_der().map_err(|e| failed(&e))?;
    let bundle = pkcs12(key_der.as_bytes(), &certificate.to_der().map_err(|e| failed(&e))?).map_err(|e| failed(&e))?;
    Ok((pem, Base64::encode_string(&bundle)))
}

/// Nova's openssl request: subject `CN=<user_id>`, clientAuth, the UPN
/// `<user_id>@localhost`, self-signed with SHA-256.
fn certificate(
    private: &rsa::RsaPrivateKey,
    user_id: &str,
) -> std::result::Result<Certificate, Box<dyn std::error::Error>> {
    let common_name = AttributeTypeAndValue {
        oid: rfc4519::CN,
        value: Any::from(Utf8StringRef::new(user_id)?),
    };
    let name: Name = RdnSequence(vec![RelativeDistinguishedName(SetOfVec::try_from(vec![common_name])?)]);
    let upn = format!("{user_id}@localhost");
    let alt_name = SubjectAltName(vec![GeneralName::OtherName(OtherName {
        type_id: UPN,
        value: Any::from(Utf8StringRef::new(&upn)?),
    })]);
    let usage = ExtendedKeyUsage(vec![rfc5280::ID_KP_CLIENT_AUTH]);
    let extensions = vec![
        Extension {
            extn_id: ExtendedKeyUsage::OID,
            critical: false,
            extn_value: OctetString::new(usage.to_der()?)?,
        },
        Extension {
            extn_id: SubjectAltName::OID,
            critical: false,
            extn_value: OctetString::new(alt_name.to_der()?)?,
        },
    ];
    // A random positive serial, as openssl gives a self-signed certificate.
    let mut serial = [0u8; 16];
    OsRng.fill_bytes(&mut serial);
    serial[0] = (serial[0] & 0x7f) | 0x40;
    let algorithm = AlgorithmIdentifierOwned {
        oid: rfc5912::SHA_256_WITH_RSA_ENCRYPTION,
        parameters: Some(Any::null()),
    };
    let public_der = private.to_public_key().to_public_key_der()?;
    let tbs_certificate = TbsCertificate {
        version: Version::V3,
        serial_number: SerialNumber::new(&serial)?,
        signature: algorithm.clone(),
        issuer: name.clone(),
        validity: validity()?,
        subject: name,
        subject_public_key_info: SubjectPublicKeyInfoOwned::from_der(public_der.as_bytes())?,
        issuer_unique_id: None,
        subject_unique_id: None,
        extensions: Some(extensions),
    };
    let signature = SigningKey::<Sha256>::new(private.clone()).sign(&tbs_certificate.to_der()?);
    Ok(Certificate {
        tbs_certificate,
        signature_algorithm: algorithm,
        signature: BitString::from_bytes(&signature.to_vec())?,
    })
}

/// From now for Nova's ten years, in UTCTime as RFC 5280 has dates before 2050
/// (x509-cert's `Validity::from_now` writes GeneralizedTime).
fn validity() -> der::Result<Validity> {
    let now = SystemTime::now();
    let time = |at| UtcTime::from_system_time(at).map(Time::UtcTime);
    Ok(Validity {
        not_before: time(now)?,
        not_after: time(now + VALID_FOR)?,
    })
}

/// `openssl pkcs12 -export -password pass:`'s content: the key (PKCS#8) and
/// the certificate in one unencrypted safe, with a SHA-256 MAC under the empty
/// password (a password protects nothing, so the bags are not encrypted).
fn pkcs12(key_der: &[u8], certificate_der: &[u8]) -> der::Result<Vec<u8>> {
    let local_key_id = SetOfVec::try_from(vec![Attribute {
        oid: LOCAL_KEY_ID,
        values: SetOfVec::try_from(vec![Any::new(
            Tag::OctetString,
            <sha1::Sha1 as sha1::Digest>::digest(certificate_der).to_vec(),
        )?])?,
    }])?;
    let certificate_bag = pkcs12::cert_type::CertBag {
        cert_id: pkcs12::PKCS_12_X509_CERT_OID,
        cert_value: OctetString::new(certificate_der)?,
    };
    let safe_contents = vec![
        SafeBag {
            bag_id: pkcs12::PKCS_12_KEY_BAG_OID,
            bag_value: key_der.to_vec(),
            bag_attributes: Some(local_key_id.clone()),
        },
        SafeBag {
            bag_id: pkcs12::PKCS_12_CERT_BAG_OID,
            bag_value: certificate_bag.to_der()?,
            bag_attributes: Some(local_key_id),
        },
    ];
    let authenticated_safe = vec![data(&safe_contents.to_der()?)?].to_der()?;
    let mut salt = [0u8; 8];
    OsRng.fill_bytes(&mut salt);
    let mac_key = derive_key_utf8::<Sha256>("", &salt, Pkcs12KeyType::Mac, MAC_ITERATIONS, 32)?;
    let pfx = Pfx {
        version: pkcs12::pfx::Version::V3,
        auth_safe: data(&authenticated_safe)?,
        mac_data: Some(MacData {
            mac: DigestInfo {
                algorithm: AlgorithmIdentifierOwned {
                    oid: rfc5912::ID_SHA_256,
                    parameters: Some(Any::null()),
                },
                digest: OctetString::new(hmac_sha256(&mac_key, &authenticated_safe))?,
            },
            mac_salt: OctetString::new(salt)?,
            iterations: MAC_ITERATIONS,
        }),
    };
    pfx.to_der()
}

/// A PKCS#7 `data` content holding `der`.
fn data(der: &[u8]) -> der::Result<ContentInfo> {
    Ok(ContentInfo {
        content_type: rfc5911::ID_DATA,
        content: Any::new(Tag::OctetString, der)?,
    })
}

/// HMAC-SHA-256 (RFC 2104) for a key no longer than SHA-256's 64-byte block;
/// the `hmac` crate for this `sha2` would be a second version of it.
fn hmac_sha256(key: &[u8], message: &[u8]) -> [u8; 32] {
    let mut block = [0u8; 64];
    block[..key.len()].copy_from_slice(key);
    let pad = |byte: u8| block.map(|b| b ^ byte);
    let inner = Sha256::new().chain_update(pad(0x36)).chain_update(message).finalize();
    Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize()
        .into()
}

#[cfg(test)]
mod tests {
    use der::DecodePem as _;
    use der::asn1::Utf8StringRef;
    use rsa::pkcs8::DecodePrivateKey as _;
    use rsa::pkcs8::DecodePublicKey as _;
    use rsa::signature::Verifier as _;

    use super::*;
    use crate::tenancy::keypairs::x509_fingerprint;

    #[test]
    fn a_generated_x509_key_pair_is_novas_winrm_certificate_and_pkcs12() {
        let (pem, bundle) = generate("a-user").unwrap();
        assert!(pem.starts_with("-----BEGIN CERTIFICATE-----\n"), "{pem}");
        let certificate = Certificate::from_pem(&pem).unwrap();
        let tbs = &certificate.tbs_certificate;
        assert_eq!(tbs.version, Version::V3);
        assert_eq!(tbs.subject.to_string(), "CN=a-user");
        assert_eq!(tbs.issuer, tbs.subject);
        let validity = &tbs.validity;
        assert!(matches!(validity.not_after, Time::UtcTime(_)), "{validity:?}");
        let lifetime = validity.not_after.to_unix_duration() - validity.not_before.to_unix_duration();
        assert_eq!(lifetime, VALID_FOR);
        let extensions = tbs.extensions.as_ref().unwrap();
        let extension = |oid| &extensions.iter().find(|e| e.extn_id == oid).unwrap().extn_value;
        let usage = ExtendedKeyUsage::from_der(extension(ExtendedKeyUsage::OID).as_bytes()).unwrap();
        assert_eq!(usage.0, [rfc5280::ID_KP_CLIENT_AUTH]);
        let alt_name = SubjectAltName::from_der(extension(SubjectAltName::OID).as_bytes()).unwrap();
        let [GeneralName::OtherName(other)] = alt_name.0.as_slice() else {
            panic!("{alt_name:?}")
        };
        assert_eq!(other.type_id, UPN);
        assert_eq!(
            other.value.decode_as::<Utf8StringRef<'_>>().unwrap().as_str(),
            "a-user@localhost"
        );

        // Self-signed with SHA-256 under the certificate's own key.
        let spki_der = tbs.subject_public_key_info.to_der().unwrap();
        let public = rsa::RsaPublicKey::from_public_key_der(&spki_der).unwrap();
        assert_eq!(
            certificate.signature_algorithm.oid,
            rfc5912::SHA_256_WITH_RSA_ENCRYPTION
        );
        let signature = rsa::pkcs1v15::Signature::try_from(certificate.signature.raw_bytes()).unwrap();
        rsa::pkcs1v15::VerifyingKey::<Sha256>::new(public.clone())
            .verify(&tbs.to_der().unwrap(), &signature)
            .unwrap();
        assert_eq!(
            x509_fingerprint(&pem).unwrap(),
            crate::tenancy::keypairs::colon_hex(&<sha1::Sha1 as sha1::Digest>::digest(certificate.to_der().unwrap()))
        );

        // The PKCS#12 bundle: its MAC under the empty password, the key whose
        // public half is the certificate's, and the certificate.
        let pfx = Pfx::from_der(&Base64::decode_vec(&bundle).unwrap()).unwrap();
        let authenticated_safe = pfx.auth_safe.content.decode_as::<OctetString>().unwrap();
        let mac_data = pfx.mac_data.unwrap();
        assert_eq!(mac_data.mac.algorithm.oid, rfc5912::ID_SHA_256);
        let mac_key = derive_key_utf8::<Sha256>(
            "",
            mac_data.mac_salt.as_bytes(),
            Pkcs12KeyType::Mac,
            mac_data.iterations,
            32,
        )
        .unwrap();
        assert_eq!(
            mac_data.mac.digest.as_bytes(),
            hmac_sha256(&mac_key, authenticated_safe.as_bytes())
        );
        let [safe] = Vec::<ContentInfo>::from_der(authenticated_safe.as_bytes())
            .unwrap()
            .try_into()
            .unwrap();
        assert_eq!(safe.content_type, rfc5911::ID_DATA);
        let safe_contents = safe.content.decode_as::<OctetString>().unwrap();
        let [key_bag, certificate_bag] = Vec::<SafeBag>::from_der(safe_contents.as_bytes())
            .unwrap()
            .try_into()
            .unwrap();
        // A decoded bag's value keeps its `[0] EXPLICIT` wrapping.
        let value = |bag: &SafeBag| der::asn1::AnyRef::from_der(&bag.bag_value).unwrap().value().to_vec();
        assert_eq!(key_bag.bag_id, pkcs12::PKCS_12_KEY_BAG_OID);
        let key = rsa::RsaPrivateKey::from_pkcs8_der(&value(&key_bag)).unwrap();
        assert_eq!(key.to_public_key(), public);
        assert_eq!(certificate_bag.bag_id, pkcs12::PKCS_12_CERT_BAG_OID);
        let bagged = pkcs12::cert_type::CertBag::from_der(&value(&certificate_bag)).unwrap();
        assert_eq!(bagged.cert_value.as_bytes(), certificate.to_der().unwrap());
    }

    #[test]
    fn hmac_sha256_is_rfc_4231s() {
        // RFC 4231, test case 2.
        assert_eq!(
            hmac_sha256(b"Jefe", b"what do ya want for nothing?"),
            *b"\x5b\xdc\xc1\x46\xbf\x60\x75\x4e\x6a\x04\x24\x26\x08\x95\x75\xc7\x5a\x00\x3f\x08\x9d\x27\x39\x83\x9d\xec\x58\xb9\x64\xec\x38\x43"
        );
    }
}
