//! One request from Slack: the function URL's event turned into the
//! endpoint's inputs, its reply into the function URL's response. Every
//! outcome is an HTTP answer (a refusal is a 4xx, a store failure a 503),
//! so Slack shows the person an error rather than waiting; nothing is
//! retried by Lambda, since Slack does not resend interactions.

use alarm_triage::adapters::dynamodb::feedback::DynamoDbFeedback;
use alarm_triage::adapters::secrets::SecretReader;
use alarm_triage::adapters::slack::SlackWebhook;
use alarm_triage::config::FeedbackConfig;
use alarm_triage::feedback::SignedRequest;
use alarm_triage::feedback::endpoint::{Reply, SLACK_BUDGET, respond};
use alarm_triage::notify::credentials::{FeedbackSecrets, SlackCredentials};
use aws_lambda_events::event::lambda_function_urls::{
    LambdaFunctionUrlRequest, LambdaFunctionUrlResponse,
};
use aws_lambda_events::http::{HeaderMap, HeaderValue, header};
use base64::Engine;
use lambda_runtime::{Diagnostic, LambdaEvent};
use secrecy::{ExposeSecret, SecretString};
use tokio::sync::OnceCell;

/// Built once per cold start; the secret is read on the first request and kept.
pub struct State {
    pub config: FeedbackConfig,
    pub secrets: SecretReader,
    pub store: DynamoDbFeedback,
    pub slack: OnceCell<(SecretString, SlackWebhook)>,
}

impl State {
    async fn slack(&self) -> alarm_triage::Result<&(SecretString, SlackWebhook)> {
        self.slack
            .get_or_try_init(|| async {
                let value = self.secrets.read(&self.config.secret).await?;
                let secrets = FeedbackSecrets::parse(&value, &self.config.secret.to_string())?;
                let slack = SlackWebhook::new(
                    SlackCredentials::BotToken(secrets.bot_token),
                    self.config.api_url.clone(),
                )?;
                Ok((secrets.signing_secret, slack))
            })
            .await
    }
}

pub async fn handle(
    state: &State,
    event: LambdaEvent<LambdaFunctionUrlRequest>,
) -> Result<LambdaFunctionUrlResponse, Diagnostic> {
    let started = std::time::Instant::now();
    let request = event.payload;
    let reply = answer(state, &request).await;
    tracing::info!(
        status = reply.status,
        outcome = reply.outcome,
        elapsed_ms = started.elapsed().as_millis() as u64,
        "feedback request answered"
    );
    Ok(response(reply))
}

async fn answer(state: &State, request: &LambdaFunctionUrlRequest) -> Reply {
    let method = request.request_context.http.method.as_deref().unwrap_or("");
    if !method.eq_ignore_ascii_case("POST") {
        return refusal(405, "refused: method", "only POST is accepted");
    }
    let Some(body) = body_bytes(request) else {
        return refusal(400, "refused: malformed", "the body is not valid base64");
    };
    let (signing_secret, slack) = match state.slack().await {
        Ok(slack) => slack,
        Err(e) => {
            tracing::error!(error = %e, "could not read the Slack secret");
            return refusal(
                503,
                "failed: secret",
                "the endpoint is not configured; try again later",
            );
        }
    };
    let header = |name: &str| request.headers.get(name).and_then(|v| v.to_str().ok());
    let signed = SignedRequest {
        timestamp: header("x-slack-request-timestamp"),
        signature: header("x-slack-signature"),
        body: &body,
    };
    respond(
        signing_secret.expose_secret().as_bytes(),
        signed,
        &state.store,
        slack,
        chrono::Utc::now(),
        tokio::time::Instant::now() + SLACK_BUDGET,
    )
    .await
}

fn refusal(status: u16, outcome: &'static str, reason: &str) -> Reply {
    Reply {
        status,
        body: reason.to_owned(),
        outcome,
    }
}

/// The raw body as Slack sent it (function URLs base64-encode form bodies).
fn body_bytes(request: &LambdaFunctionUrlRequest) -> Option<Vec<u8>> {
    let body = request.body.as_deref().unwrap_or("");
    if request.is_base64_encoded {
        base64::engine::general_purpose::STANDARD.decode(body).ok()
    } else {
        Some(body.as_bytes().to_vec())
    }
}

fn response(reply: Reply) -> LambdaFunctionUrlResponse {
    let mut headers = HeaderMap::new();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    let mut response = LambdaFunctionUrlResponse::default();
    response.status_code = i64::from(reply.status);
    response.headers = headers;
    response.body = Some(reply.body);
    response
}
