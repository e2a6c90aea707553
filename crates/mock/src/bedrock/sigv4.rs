//! The mock's check of a Bedrock request's credentials, as AWS makes it: a SigV4 signature is
//! computed again (by the `aws-sigv4` crate, from the headers the request says it signed, its
//! path and its body) with the test key pair the mock was given, and compared; a Bedrock API
//! key is compared with the one given.

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;
use axum::http::{HeaderMap, Uri};
use std::time::{Duration, SystemTime};

/// The credentials the mock accepts; a scenario holds them (`kiln mock --aws-*`).
pub use crate::scenario::AwsKeys;

/// A refusal: status, AWS error type (`x-amzn-ErrorType`) and message.
pub type Refusal = (u16, &'static str, String);

/// What AWS says when the signature differs.
pub const SIGNATURE_MISMATCH: &str = "The request signature we calculated does not match the signature you provided. Check your AWS Secret Access Key and signing method. Consult the service documentation for details.";

/// How far a request's time may be from the mock's, as AWS allows.
const MAX_SKEW: Duration = Duration::from_secs(15 * 60);

/// The parts of an `Authorization: AWS4-HMAC-SHA256 ...` header.
struct Sig<'a> {
    access_key_id: &'a str,
    date: &'a str,
    region: &'a str,
    service: &'a str,
    signed_headers: Vec<&'a str>,
    signature: &'a str,
}

fn parse(auth: &str) -> Option<Sig<'_>> {
    let rest = auth.strip_prefix("AWS4-HMAC-SHA256 ")?;
    let (mut credential, mut signed, mut signature) = (None, None, None);
    for part in rest.split(',').map(str::trim) {
        let (k, v) = part.split_once('=')?;
        match k {
            "Credential" => credential = Some(v),
            "SignedHeaders" => signed = Some(v),
            "Signature" => signature = Some(v),
            _ => {}
        }
    }
    let scope: Vec<&str> = credential?.split('/').collect();
    let [access_key_id, date, region, service, "aws4_request"] = scope[..] else {
        return None;
    };
    Some(Sig {
        access_key_id,
        date,
        region,
        service,
        signed_headers: signed?.split(';').collect(),
        signature: signature?,
    })
}

/// The access key id or bearer key a request names (the mock's client for the scenario).
pub fn identity(headers: &HeaderMap) -> Option<String> {
    let auth = headers.get("authorization")?.to_str().ok()?;
    match auth.strip_prefix("Bearer ") {
        Some(token) => Some(token.to_string()),
        None => parse(auth).map(|s| s.access_key_id.to_string()),
    }
}

fn denied(kind: &'static str, message: &str) -> Refusal {
    (403, kind, message.to_string())
}

/// Checks a request's credentials; `keys` none accepts any (when `require_auth`, any at all).
pub fn verify(
    keys: Option<&AwsKeys>,
    require_auth: bool,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<(), Refusal> {
    let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) else {
        return match require_auth {
            true => Err(denied(
                "MissingAuthenticationTokenException",
                "Missing Authentication Token",
            )),
            false => Ok(()),
        };
    };
    let Some(keys) = keys else {
        return Ok(());
    };
    if let Some(token) = auth.strip_prefix("Bearer ") {
        return match &keys.bearer {
            Some(b) if b == token => Ok(()),
            _ => Err(denied(
                "AccessDeniedException",
                "Authentication failed: Please make sure your API Key is valid.",
            )),
        };
    }
    let sig = parse(auth).ok_or_else(|| {
        denied(
            "IncompleteSignatureException",
            "Authorization header requires 'Credential', 'Signature' and 'SignedHeaders' parameters.",
        )
    })?;
    let token = headers
        .get("x-amz-security-token")
        .and_then(|v| v.to_str().ok());
    let invalid_token = || {
        denied(
            "UnrecognizedClientException",
            "The security token included in the request is invalid.",
        )
    };
    if sig.access_key_id != keys.access_key_id {
        return Err(invalid_token());
    }
    if keys.session_token.is_some() && token != keys.session_token.as_deref() {
        return Err(invalid_token());
    }
    let expected = expected_signature(&sig, keys, token, uri, headers, body)?;
    let same = expected.len() == sig.signature.len()
        && expected
            .bytes()
            .zip(sig.signature.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0;
    match same {
        true => Ok(()),
        false => Err(denied("InvalidSignatureException", SIGNATURE_MISMATCH)),
    }
}

/// The signature the request should carry, made again with the mock's secret.
fn expected_signature(
    sig: &Sig<'_>,
    keys: &AwsKeys,
    token: Option<&str>,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
) -> Result<String, Refusal> {
    let mismatch = || denied("InvalidSignatureException", SIGNATURE_MISMATCH);
    let stamp = headers
        .get("x-amz-date")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(mismatch)?;
    let time = parse_amz_date(stamp).ok_or_else(mismatch)?;
    if !stamp.starts_with(sig.date) {
        return Err(mismatch());
    }
    let now = SystemTime::now();
    let skew = now.duration_since(time).unwrap_or_else(|e| e.duration());
    if skew > MAX_SKEW {
        return Err(denied(
            "InvalidSignatureException",
            &format!(
                "Signature expired: {stamp} is now earlier or later than 15 minutes from now."
            ),
        ));
    }
    let token_signed = sig.signed_headers.contains(&"x-amz-security-token");
    let mut signed: Vec<(&str, &str)> = Vec::new();
    for name in &sig.signed_headers {
        if matches!(*name, "x-amz-date" | "x-amz-security-token") {
            continue;
        }
        for v in headers.get_all(*name) {
            signed.push((name, v.to_str().map_err(|_| mismatch())?));
        }
    }
    let host = headers
        .get("host")
        .and_then(|v| v.to_str().ok())
        .ok_or_else(mismatch)?;
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let url = format!("http://{host}{path}");
    let identity: Identity = Credentials::new(
        &keys.access_key_id,
        &keys.secret_access_key,
        token.filter(|_| token_signed).map(str::to_string),
        None,
        "kiln-mock",
    )
    .into();
    let mut settings = SigningSettings::default();
    // Whatever the client signed is checked (the SDKs differ in what they leave out).
    settings.excluded_headers = Some(vec!["authorization".into()]);
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(sig.region)
        .name(sig.service)
        .time(time)
        .settings(settings)
        .build()
        .map_err(|_| mismatch())?
        .into();
    let request = SignableRequest::new("POST", url, signed.into_iter(), SignableBody::Bytes(body))
        .map_err(|_| mismatch())?;
    let (_, signature) = sign(request, &params).map_err(|_| mismatch())?.into_parts();
    Ok(signature)
}

/// `20261202T133000Z` as a time.
fn parse_amz_date(s: &str) -> Option<SystemTime> {
    let b = s.as_bytes();
    if b.len() != 16 || b[8] != b'T' || b[15] != b'Z' {
        return None;
    }
    let num = |r: std::ops::Range<usize>| s.get(r)?.parse::<i64>().ok();
    let (y, m, d) = (num(0..4)?, num(4..6)?, num(6..8)?);
    let (hh, mm, ss) = (num(9..11)?, num(11..13)?, num(13..15)?);
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) || hh > 23 || mm > 59 || ss > 60 {
        return None;
    }
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((m + 9) % 12) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + hh * 3600 + mm * 60 + ss;
    u64::try_from(secs)
        .ok()
        .map(|s| SystemTime::UNIX_EPOCH + Duration::from_secs(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amz_dates_read_as_times() {
        let t = parse_amz_date("20150830T123600Z").expect("date");
        let secs = t
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("after")
            .as_secs();
        assert_eq!(secs, 1_440_938_160);
        assert!(parse_amz_date("2015-08-30T12:36Z").is_none());
        assert!(parse_amz_date("20151330T123600Z").is_none());
    }

    #[test]
    fn authorization_headers_parse_into_their_scope() {
        let s = parse("AWS4-HMAC-SHA256 Credential=AKID/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc")
            .expect("parsed");
        assert_eq!(
            (s.access_key_id, s.date, s.region, s.service),
            ("AKID", "20150830", "us-east-1", "bedrock")
        );
        assert_eq!(s.signed_headers, ["host", "x-amz-date"]);
        assert_eq!(s.signature, "abc");
        assert!(parse("AWS4-HMAC-SHA256 Credential=AKID/x, Signature=abc").is_none());
    }
}
