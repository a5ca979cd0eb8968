//! EKS: the cluster's endpoint and CA, and the bearer token EKS accepts (a
//! presigned STS GetCallerIdentity URL with the cluster name signed in the
//! `x-k8s-aws-id` header), generated with aws-sigv4 from the function's own
//! credentials, as `aws eks get-token` does.

use std::time::{Duration, SystemTime};

use aws_credential_types::Credentials;
use aws_sigv4::http_request::{
    SignableBody, SignableRequest, SignatureLocation, SigningSettings, sign,
};
use aws_smithy_runtime_api::client::identity::Identity;
use base64::Engine;

use super::sdk_failure;
use crate::error::{Error, Result};
use crate::evidence::source;

/// How long an EKS token is valid for (EKS accepts at most 15 minutes; the CLI asks for 60 s of presigning).
const PRESIGN_SECONDS: u64 = 60;

/// What DescribeCluster says about reaching the cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EksCluster {
    pub name: String,
    pub endpoint: Option<String>,
    /// The cluster CA, base64 PEM as EKS returns it.
    pub certificate_authority: Option<String>,
    pub public_access: bool,
    pub private_access: bool,
    pub public_access_cidrs: Vec<String>,
}

impl EksCluster {
    /// The CA certificate in DER, as rustls wants it.
    pub fn ca_der(&self) -> Option<Vec<u8>> {
        let pem = base64::engine::general_purpose::STANDARD
            .decode(self.certificate_authority.as_deref()?.trim())
            .ok()?;
        let pem = String::from_utf8(pem).ok()?;
        let body: String = pem
            .lines()
            .filter(|l| !l.starts_with("-----"))
            .collect::<Vec<_>>()
            .concat();
        base64::engine::general_purpose::STANDARD.decode(body).ok()
    }
}

/// Reads the cluster through aws-sdk-eks.
pub async fn describe_cluster(client: &aws_sdk_eks::Client, name: &str) -> Result<EksCluster> {
    let out = client
        .describe_cluster()
        .name(name)
        .send()
        .await
        .map_err(|e| sdk_failure(source::CLUSTER, "eks:DescribeCluster", &e))?;
    let cluster = out.cluster().ok_or_else(|| Error::Source {
        source_name: source::CLUSTER,
        reason: format!("eks:DescribeCluster returned no cluster for {name}"),
        retryable: false,
    })?;
    let vpc = cluster.resources_vpc_config();
    Ok(EksCluster {
        name: name.to_owned(),
        endpoint: cluster.endpoint().map(str::to_owned),
        certificate_authority: cluster
            .certificate_authority()
            .and_then(|c| c.data())
            .map(str::to_owned),
        public_access: vpc.is_some_and(|v| v.endpoint_public_access()),
        private_access: vpc.is_some_and(|v| v.endpoint_private_access()),
        public_access_cidrs: vpc
            .map(|v| v.public_access_cidrs().to_vec())
            .unwrap_or_default(),
    })
}

/// The `k8s-aws-v1.` bearer token for `cluster`, signed at `now` for `region`'s STS.
pub fn token(
    credentials: &Credentials,
    region: &str,
    cluster: &str,
    now: SystemTime,
) -> Result<String> {
    let host = format!("sts.{region}.amazonaws.com");
    let url = format!("https://{host}/?Action=GetCallerIdentity&Version=2011-06-15");
    let headers = [("host", host.as_str()), ("x-k8s-aws-id", cluster)];
    let signing_failed = |e: &dyn std::fmt::Display| Error::Source {
        source_name: source::KUBERNETES,
        reason: format!("could not sign the EKS token: {e}"),
        retryable: false,
    };
    let request = SignableRequest::new(
        "GET",
        url.clone(),
        headers.into_iter(),
        SignableBody::Bytes(&[]),
    )
    .map_err(|e| signing_failed(&e))?;
    let mut settings = SigningSettings::default();
    settings.signature_location = SignatureLocation::QueryParams;
    settings.expires_in = Some(Duration::from_secs(PRESIGN_SECONDS));
    let identity: Identity = credentials.clone().into();
    let params = aws_sigv4::sign::v4::SigningParams::builder()
        .identity(&identity)
        .region(region)
        .name("sts")
        .time(now)
        .settings(settings)
        .build()
        .map_err(|e| signing_failed(&e))?
        .into();
    let (instructions, _signature) = sign(request, &params)
        .map_err(|e| signing_failed(&e))?
        .into_parts();
    let mut presigned = http::Request::get(url)
        .body(())
        .map_err(|e| signing_failed(&e))?;
    instructions.apply_to_request_http1x(&mut presigned);
    let url = presigned.uri().to_string();
    Ok(format!(
        "k8s-aws-v1.{}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(url)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Computed with botocore as `aws eks get-token --cluster-name shop-prod --region eu-west-1`
    /// does, with these credentials, at 2026-11-29T12:00:00Z.
    const CLI_URL: &str = "https://sts.eu-west-1.amazonaws.com/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AKIDEXAMPLE%2F20261129%2Feu-west-1%2Fsts%2Faws4_request&X-Amz-Date=20261129T120000Z&X-Amz-Expires=60&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id&X-Amz-Signature=5da47ee8b00b86b798f9b7421c8ef432ca3dc571dc51c14070c5732018164ec1";

    fn decode(token: &str) -> String {
        let payload = token.strip_prefix("k8s-aws-v1.").expect("the EKS prefix");
        String::from_utf8(
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(payload)
                .expect("base64url"),
        )
        .expect("utf-8")
    }

    fn params(url: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = url
            .split_once('?')
            .map(|(_, q)| q)
            .unwrap_or_default()
            .split('&')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        out.sort();
        out
    }

    #[test]
    fn the_token_matches_the_one_the_aws_cli_makes() {
        let credentials = Credentials::new(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            None,
            "test",
        );
        let at = SystemTime::UNIX_EPOCH + Duration::from_secs(1_795_953_600); // 2026-11-29T12:00:00Z
        let token = token(&credentials, "eu-west-1", "shop-prod", at).unwrap();
        let url = decode(&token);
        assert!(
            url.starts_with("https://sts.eu-west-1.amazonaws.com/?"),
            "{url}"
        );
        assert_eq!(params(&url), params(CLI_URL));
        assert!(!token.contains('='), "base64url without padding");
    }

    #[test]
    fn a_session_token_is_part_of_the_presigned_url() {
        let credentials = Credentials::new("AKID", "secret", Some("session".into()), None, "test");
        let url = decode(&token(&credentials, "eu-west-1", "c", SystemTime::now()).unwrap());
        assert!(url.contains("X-Amz-Security-Token=session"), "{url}");
        assert!(!url.contains("secret"));
    }

    #[test]
    fn the_ca_is_read_from_base64_pem() {
        let der = [0x30u8, 0x82, 0x01, 0x0a];
        let pem = format!(
            "-----BEGIN CERTIFICATE-----\n{}\n-----END CERTIFICATE-----\n",
            base64::engine::general_purpose::STANDARD.encode(der)
        );
        let cluster = EksCluster {
            name: "c".into(),
            endpoint: None,
            certificate_authority: Some(base64::engine::general_purpose::STANDARD.encode(pem)),
            public_access: true,
            private_access: false,
            public_access_cidrs: vec![],
        };
        assert_eq!(cluster.ca_der(), Some(der.to_vec()));
    }
}
