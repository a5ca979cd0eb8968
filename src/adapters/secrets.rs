//! Reads the Slack secret from Secrets Manager or an SSM SecureString. The
//! value is returned as a [`SecretString`] and never logged; errors name the
//! secret and the IAM action, not the value.

use aws_config::SdkConfig;
use secrecy::SecretString;

use super::{sdk_failure, service_error_code};
use crate::config::SecretLocation;
use crate::error::{Error, Result};

/// Both clients are cheap; only the configured one is called.
#[derive(Debug, Clone)]
pub struct SecretReader {
    secrets_manager: aws_sdk_secretsmanager::Client,
    ssm: aws_sdk_ssm::Client,
}

impl SecretReader {
    pub fn new(aws: &SdkConfig) -> Self {
        SecretReader {
            secrets_manager: aws_sdk_secretsmanager::Client::new(aws),
            ssm: aws_sdk_ssm::Client::new(aws),
        }
    }

    /// Reads the current value.
    pub async fn read(&self, location: &SecretLocation) -> Result<SecretString> {
        let missing = |what: &str| Error::Secret {
            secret: location.to_string(),
            problem: format!(
                "does not exist or has no {what}; create it (see the README's Slack section)"
            ),
        };
        match location {
            SecretLocation::SecretsManager(id) => {
                let answer = self
                    .secrets_manager
                    .get_secret_value()
                    .secret_id(id)
                    .send()
                    .await
                    .map_err(|e| match service_error_code(&e) {
                        Some("ResourceNotFoundException") => missing("current value"),
                        _ => sdk_failure(
                            "secretsmanager",
                            &format!("secretsmanager:GetSecretValue on {id}"),
                            &e,
                        ),
                    })?;
                answer
                    .secret_string()
                    .map(|s| SecretString::from(s.to_owned()))
                    .ok_or_else(|| {
                        missing("SecretString (a binary secret cannot hold a webhook URL)")
                    })
            }
            SecretLocation::SsmParameter(name) => {
                let answer = self
                    .ssm
                    .get_parameter()
                    .name(name)
                    .with_decryption(true)
                    .send()
                    .await
                    .map_err(|e| match service_error_code(&e) {
                        Some("ParameterNotFound") => missing("value"),
                        _ => sdk_failure(
                            "ssm",
                            &format!("ssm:GetParameter on {name} (and kms:Decrypt on its key)"),
                            &e,
                        ),
                    })?;
                answer
                    .parameter()
                    .and_then(|p| p.value())
                    .map(|v| SecretString::from(v.to_owned()))
                    .ok_or_else(|| missing("value"))
            }
        }
    }
}
