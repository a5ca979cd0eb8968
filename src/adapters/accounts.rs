//! One bot for many accounts: an alarm's evidence is read in the alarm's own
//! account and region (both from its ARN). The function's own account is
//! read with its own credentials; any other through `sts:AssumeRole` into the
//! member role there. Assumed credentials are kept until five minutes before
//! they expire and shared by every diagnosis of that account (one STS call
//! per account an hour, not one per alarm), and the sources built on them
//! (clients, the cluster connection) are kept with them.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_config::SdkConfig;
use aws_credential_types::Credentials;
use aws_credential_types::provider::{self, ProvideCredentials, SharedCredentialsProvider, future};
use aws_smithy_types::error::display::DisplayErrorContext;
use tokio::sync::Mutex;

use super::AwsSources;
use crate::config::{ClusterSettings, Organisation};

/// Credentials this close to expiry are renewed before use.
const RENEW_BEFORE_EXPIRY: Duration = Duration::from_secs(300);

/// How long an assumed session lasts (STS's default; the role's maximum must allow it).
pub const SESSION: Duration = Duration::from_secs(3600);

/// The sources for one account and region, and the member role's credentials they use.
type Scoped = (AwsSources, Option<Arc<MemberCredentials>>);

/// Where other accounts' sources come from, shared by every clone of the sources.
#[derive(Debug)]
pub struct AccountScope {
    /// The function's own configuration (its credentials and region).
    pub base: SdkConfig,
    pub home_region: String,
    pub cluster: ClusterSettings,
    pub organisation: Option<Organisation>,
    /// Sources per (account, region), built on first use.
    built: Mutex<HashMap<(String, String), Scoped>>,
}

impl AccountScope {
    pub fn new(
        base: SdkConfig,
        home_region: String,
        cluster: ClusterSettings,
        organisation: Option<Organisation>,
    ) -> Self {
        AccountScope {
            base,
            home_region,
            cluster,
            organisation,
            built: Mutex::new(HashMap::new()),
        }
    }

    /// The sources for `account` in `region`; `Ok(None)` when the home sources
    /// already read them. `Err` says which role could not be assumed and what
    /// to deploy.
    pub async fn sources_for(
        &self,
        partition: &str,
        account: &str,
        region: &str,
    ) -> Result<Option<AwsSources>, String> {
        let home = self
            .organisation
            .as_ref()
            .is_none_or(|o| o.home_account == account);
        if home && region == self.home_region {
            return Ok(None);
        }
        if !home && self.organisation.is_none() {
            return Ok(None);
        }
        let key = (account.to_owned(), region.to_owned());
        let mut built = self.built.lock().await;
        let (sources, member) = match built.get(&key) {
            Some(entry) => entry.clone(),
            None => {
                let entry = self.build(partition, account, region, home).await;
                built.insert(key, entry.clone());
                entry
            }
        };
        drop(built);
        if let Some(member) = member {
            // Assume now, once: a role that is missing or does not trust us is
            // one clear gap, not one failure per source.
            member.credentials().await.map_err(|e| {
                format!(
                    "cannot read account {account}: sts:AssumeRole into {} failed ({}). Deploy infra/member/template.yaml in account {account} (it creates the role, trusting only this function's role), or check its trust policy",
                    member.role_arn,
                    refusal(&e)
                )
            })?;
        }
        Ok(Some(sources))
    }
}

impl AccountScope {
    /// Sources reading `account` in `region`: through the member role outside the home account.
    async fn build(&self, partition: &str, account: &str, region: &str, home: bool) -> Scoped {
        let in_region = self
            .base
            .to_builder()
            .region(aws_config::Region::new(region.to_owned()));
        let (config, member) = match (&self.organisation, home) {
            (Some(organisation), false) => {
                let member = Arc::new(
                    MemberCredentials::new(&self.base, organisation.role_arn(partition, account))
                        .await,
                );
                let config = in_region
                    .credentials_provider(SharedCredentialsProvider::new(SharedMember(
                        member.clone(),
                    )))
                    .build();
                (config, Some(member))
            }
            _ => (in_region.build(), None),
        };
        // The home cluster's name means nothing elsewhere: the target group's tag names it.
        let cluster = ClusterSettings {
            cluster_name: if home {
                self.cluster.cluster_name.clone()
            } else {
                None
            },
            ..self.cluster.clone()
        };
        (AwsSources::new(&config, &cluster), member)
    }
}

/// What STS said, in a line: its error code and message when it answered,
/// else the error chain.
fn refusal(error: &(dyn std::error::Error + 'static)) -> String {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(e) = cause {
        if let Some(meta) = e.downcast_ref::<aws_smithy_types::error::ErrorMetadata>() {
            return match (meta.code(), meta.message()) {
                (Some(code), Some(message)) => format!("{code}: {message}"),
                (Some(code), None) => code.to_owned(),
                _ => DisplayErrorContext(error).to_string(),
            };
        }
        cause = e.source();
    }
    DisplayErrorContext(error).to_string()
}

/// The member role's credentials, assumed on first use and renewed shortly
/// before they expire; concurrent diagnoses wait for one STS call.
#[derive(Debug)]
pub struct MemberCredentials {
    pub role_arn: String,
    provider: aws_config::sts::AssumeRoleProvider,
    current: Mutex<Option<Credentials>>,
}

impl MemberCredentials {
    async fn new(base: &SdkConfig, role_arn: String) -> Self {
        let provider = aws_config::sts::AssumeRoleProvider::builder(role_arn.clone())
            .session_name("alarm-triage")
            .session_length(SESSION)
            .configure(base)
            .build()
            .await;
        MemberCredentials {
            role_arn,
            provider,
            current: Mutex::new(None),
        }
    }

    /// Cached credentials while they have more than five minutes left, else fresh ones.
    pub async fn credentials(&self) -> provider::Result {
        let mut current = self.current.lock().await;
        if let Some(credentials) = current.as_ref()
            && still_fresh(credentials.expiry(), SystemTime::now())
        {
            return Ok(credentials.clone());
        }
        let started = std::time::Instant::now();
        let fresh = self.provider.provide_credentials().await?;
        tracing::info!(
            role_arn = %self.role_arn,
            sts_ms = started.elapsed().as_millis() as u64,
            "member role assumed"
        );
        *current = Some(fresh.clone());
        Ok(fresh)
    }
}

/// Whether credentials expiring at `expiry` may still be used at `now`.
fn still_fresh(expiry: Option<SystemTime>, now: SystemTime) -> bool {
    expiry.is_none_or(|t| {
        t.duration_since(now)
            .is_ok_and(|left| left > RENEW_BEFORE_EXPIRY)
    })
}

#[derive(Debug, Clone)]
struct SharedMember(Arc<MemberCredentials>);

impl ProvideCredentials for SharedMember {
    fn provide_credentials<'a>(&'a self) -> future::ProvideCredentials<'a>
    where
        Self: 'a,
    {
        future::ProvideCredentials::new(self.0.credentials())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_are_reused_until_five_minutes_before_they_expire() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert!(still_fresh(Some(now + Duration::from_secs(3600)), now));
        assert!(still_fresh(Some(now + Duration::from_secs(301)), now));
        assert!(!still_fresh(Some(now + Duration::from_secs(299)), now));
        assert!(!still_fresh(Some(now - Duration::from_secs(1)), now));
        assert!(still_fresh(None, now));
    }
}
