//! Test support: a local world (moto, Prometheus, the Kubernetes API) started
//! by the project's own stack script for one test and stopped when the guard
//! drops, also when the test fails.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

/// The repository root: the nearest ancestor of this crate holding infra/local/stack.py.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .ancestors()
        .find(|p| p.join("infra/local/stack.py").exists())
        .map(Path::to_path_buf)
        .expect("the repository root holds infra/local/stack.py")
}

fn python() -> PathBuf {
    let python = repo_root().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/setup.sh first (scripts/test.sh does)",
        python.display()
    );
    python
}

/// A running world. Dropping it stops every process it started.
#[derive(Debug)]
pub struct LocalWorld {
    pub name: String,
    pub state: PathBuf,
    pub env: HashMap<String, String>,
    pub facts: Value,
}

/// Options for starting a world.
#[derive(Debug, Default, Clone)]
pub struct Options {
    /// Also run the diagnose Lambda (this binary) under cargo-lambda's runtime emulator.
    pub lambda_binary: Option<PathBuf>,
    /// Variables of the Lambda's environment to set (`KEY=VALUE`) or remove (`KEY=`).
    pub lambda_env: Vec<String>,
    /// Also run notify-slack (this binary) against the local Slack, with
    /// `webhook` or `bot` credentials.
    pub notify: Option<(PathBuf, &'static str)>,
    /// Variables of notify-slack's environment to set or remove.
    pub notify_env: Vec<String>,
    /// Warm instances of the diagnose function (default 1).
    pub lambda_instances: Option<usize>,
    /// With `notify` in bot mode: verdict buttons, the feedback table, and this
    /// feedback binary behind cargo-lambda's function URL (`FEEDBACK_URL`).
    pub feedback_binary: Option<PathBuf>,
    /// Lambda's asynchronous retries after a failed invocation (0-2, default 0),
    /// then the event goes to the failed-events queue.
    pub lambda_retries: Option<u8>,
    /// Hold likely transients this many seconds (the hold queue and its event source mapping).
    pub hold_seconds: Option<u32>,
    /// One email per incident (`EMAIL_INCIDENT_TABLE`).
    pub email_incidents: bool,
    /// With `notify`: this digest binary under the emulator (`DIGEST_INVOKE_URL`).
    pub digest_binary: Option<PathBuf>,
}

impl LocalWorld {
    pub fn up(name: &str) -> Self {
        Self::up_with(name, Options::default())
    }

    pub fn up_with(name: &str, options: Options) -> Self {
        let root = repo_root();
        let state =
            root.join("target/worlds")
                .join(format!("{name}-{}-{}", std::process::id(), unique()));
        let mut command = Command::new(python());
        command
            .arg(root.join("infra/local/stack.py"))
            .arg("up")
            .arg(if name.contains('/') {
                PathBuf::from(name)
            } else {
                root.join("tests/worlds").join(name)
            })
            .arg("--state")
            .arg(&state)
            .arg("--json")
            .env("AWS_EC2_METADATA_DISABLED", "true");
        if let Some(binary) = &options.lambda_binary {
            command.arg("--lambda").env("DIAGNOSE_BINARY", binary);
        }
        for item in &options.lambda_env {
            command.arg("--lambda-env").arg(item);
        }
        if let Some(n) = options.lambda_instances {
            command.arg("--lambda-instances").arg(n.to_string());
        }
        if let Some(n) = options.lambda_retries {
            command.arg("--lambda-retries").arg(n.to_string());
        }
        if let Some((binary, mode)) = &options.notify {
            command
                .arg("--notify")
                .arg(mode)
                .env("NOTIFY_SLACK_BINARY", binary);
        }
        if let Some(binary) = &options.feedback_binary {
            command.arg("--feedback").env("FEEDBACK_BINARY", binary);
        }
        if let Some(seconds) = options.hold_seconds {
            command.arg("--hold").arg(seconds.to_string());
        }
        if let Some(binary) = &options.digest_binary {
            command.arg("--digest").env("DIGEST_BINARY", binary);
        }
        if options.email_incidents {
            command.arg("--email-incidents");
        }
        for item in &options.notify_env {
            command.arg("--notify-env").arg(item);
        }
        let output = command.output().expect("stack.py runs");
        assert!(
            output.status.success(),
            "stack.py up {name} failed:\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let started: Value =
            serde_json::from_slice(&output.stdout).expect("stack.py --json prints JSON");
        let env = started["env"]
            .as_object()
            .expect("env")
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        LocalWorld {
            name: Path::new(name)
                .file_name()
                .unwrap()
                .to_string_lossy()
                .into_owned(),
            state,
            env,
            facts: started["facts"].clone(),
        }
    }

    pub fn var(&self, key: &str) -> &str {
        self.env
            .get(key)
            .map(String::as_str)
            .unwrap_or_else(|| panic!("{key} is not in the world's environment"))
    }

    pub fn endpoint(&self) -> &str {
        self.var("AWS_ENDPOINT_URL")
    }

    pub fn region(&self) -> &str {
        self.var("AWS_REGION")
    }

    /// An SDK configuration that talks to this world only.
    pub async fn sdk_config(&self) -> aws_config::SdkConfig {
        self.sdk_config_bounded(std::time::Duration::from_secs(8))
            .await
    }

    /// As [`Self::sdk_config`], each call bounded by `per_call` as the functions' clients are.
    pub async fn sdk_config_bounded(&self, per_call: std::time::Duration) -> aws_config::SdkConfig {
        alarm_triage::adapters::with_call_limits(
            aws_config::defaults(aws_config::BehaviorVersion::latest()),
            per_call,
        )
        .endpoint_url(self.endpoint())
        .region(aws_config::Region::new(self.region().to_owned()))
        .credentials_provider(aws_sdk_cloudwatch::config::Credentials::new(
            "testing",
            "testing",
            None,
            None,
            "local-world",
        ))
        .load()
        .await
    }

    /// Makes the world's alarm change state; returns the captured SNS event file.
    pub fn deliver(&self) -> PathBuf {
        self.deliver_to(None)
    }

    /// As [`Self::deliver`], to another state than the world's (`OK` for the resolution).
    pub fn deliver_to(&self, state: Option<&str>) -> PathBuf {
        self.deliver_with(state, None)
    }

    /// As [`Self::deliver`], through `sns`, `eventbridge` or `both`.
    pub fn deliver_via(&self, via: &str) -> PathBuf {
        self.deliver_with(None, Some(via))
    }

    fn deliver_with(&self, state: Option<&str>, via: Option<&str>) -> PathBuf {
        let mut command = Command::new(python());
        command
            .arg(repo_root().join("infra/local/stack.py"))
            .arg("deliver")
            .arg("--state")
            .arg(&self.state)
            .env("AWS_EC2_METADATA_DISABLED", "true");
        if let Some(state) = state {
            command.arg("--to").arg(state);
        }
        if let Some(via) = via {
            command.arg("--via").arg(via);
        }
        let output = command.output().expect("stack.py runs");
        assert!(
            output.status.success(),
            "deliver failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        PathBuf::from(String::from_utf8_lossy(&output.stdout).trim())
    }

    /// Adds fault or latency rules in front of moto (see infra/local/moto_world/faults.py).
    pub fn inject(&self, rules: Value) {
        let body = serde_json::json!({ "rules": rules }).to_string();
        let answer = http(self.endpoint(), "POST", "/_alarm_triage/faults", &body);
        assert!(
            answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.0 200"),
            "{answer}"
        );
    }

    /// AWS calls moto received, by `service:operation`, since the last reset.
    pub fn calls(&self, reset: bool) -> HashMap<String, u64> {
        let answer = http(
            self.endpoint(),
            if reset { "DELETE" } else { "GET" },
            "/_alarm_triage/calls",
            "",
        );
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or("{}");
        let parsed: Value = serde_json::from_str(body).unwrap();
        parsed["calls"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect()
    }

    /// A copy of a world with its world.yaml edited (for variants of a world in one test).
    pub fn variant(name: &str, edit: impl FnOnce(String) -> String) -> PathBuf {
        let root = repo_root();
        let dir = root.join("target/worlds/variants").join(format!(
            "{name}-{}-{}",
            std::process::id(),
            unique()
        ));
        std::fs::create_dir_all(dir.join("kubernetes")).unwrap();
        let source = root.join("tests/worlds").join(name);
        for entry in std::fs::read_dir(source.join("kubernetes")).unwrap() {
            let entry = entry.unwrap();
            std::fs::copy(entry.path(), dir.join("kubernetes").join(entry.file_name())).unwrap();
        }
        let world = std::fs::read_to_string(source.join("world.yaml")).unwrap();
        std::fs::write(dir.join("world.yaml"), edit(world)).unwrap();
        dir
    }

    /// Fires an alarm storm (`stack.py storm`): `alarms` alarms on
    /// `load_balancers` load balancers, `notifications` transitions within `within_s`.
    pub fn storm(
        &self,
        alarms: u32,
        load_balancers: u32,
        notifications: u32,
        within_s: u32,
    ) -> Value {
        let output = Command::new(python())
            .arg(repo_root().join("infra/local/stack.py"))
            .args(["storm", "--json", "--state"])
            .arg(&self.state)
            .args(["--alarms", &alarms.to_string()])
            .args(["--load-balancers", &load_balancers.to_string()])
            .args(["--notifications", &notifications.to_string()])
            .args(["--within", &within_s.to_string()])
            .env("AWS_EC2_METADATA_DISABLED", "true")
            .output()
            .expect("stack.py runs");
        assert!(
            output.status.success(),
            "storm failed: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        serde_json::from_slice(&output.stdout).expect("stack.py storm --json prints JSON")
    }

    /// Takes every message from an SQS queue of this world until it stays
    /// empty or `wait` has passed; returns the bodies.
    pub async fn drain_queue(
        &self,
        queue_url: &str,
        want: usize,
        wait: std::time::Duration,
    ) -> Vec<String> {
        let sqs = aws_sdk_sqs::Client::new(&self.sdk_config().await);
        let deadline = std::time::Instant::now() + wait;
        let mut bodies = Vec::new();
        while bodies.len() < want && std::time::Instant::now() < deadline {
            let answer = sqs
                .receive_message()
                .queue_url(queue_url)
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send()
                .await
                .unwrap();
            for message in answer.messages() {
                bodies.push(message.body().unwrap_or_default().to_owned());
                if let Some(handle) = message.receipt_handle() {
                    sqs.delete_message()
                        .queue_url(queue_url)
                        .receipt_handle(handle)
                        .send()
                        .await
                        .unwrap();
                }
            }
        }
        bodies
    }

    /// The world's expected diagnosis (`expected.yaml`), as JSON.
    pub fn expected(&self) -> Value {
        let path = repo_root()
            .join("tests/worlds")
            .join(&self.name)
            .join("expected.yaml");
        let output = Command::new(python())
            .arg("-c")
            .arg("import sys, json, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))")
            .arg(&path)
            .output()
            .unwrap();
        serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|_| panic!("{} is not valid YAML", path.display()))
    }

    /// The invocations a function's SNS bridge made (`invocations` for diagnose,
    /// `notify-slack-invocations` for notify-slack), waiting for at least `at_least`.
    pub fn invocations(&self, log: &str, at_least: usize, wait: std::time::Duration) -> Vec<Value> {
        let path = self.state.join(format!("{log}.jsonl"));
        let deadline = std::time::Instant::now() + wait;
        loop {
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let records: Vec<Value> = text
                .lines()
                .map(|l| serde_json::from_str(l).unwrap())
                .collect();
            if records.len() >= at_least || std::time::Instant::now() > deadline {
                return records;
            }
            std::thread::sleep(std::time::Duration::from_millis(200));
        }
    }

    /// The SNS envelopes on the queue subscribed to the diagnosis topic, oldest
    /// first: waits up to `wait` for the first, then takes all that are there.
    pub async fn diagnosis_envelopes(&self, wait: std::time::Duration) -> Vec<Value> {
        let sqs = aws_sdk_sqs::Client::new(&self.sdk_config().await);
        let deadline = std::time::Instant::now() + wait;
        let mut envelopes: Vec<Value> = Vec::new();
        loop {
            let answer = sqs
                .receive_message()
                .queue_url(self.var("DIAGNOSIS_QUEUE_URL"))
                .max_number_of_messages(10)
                .wait_time_seconds(1)
                .send()
                .await
                .unwrap();
            for message in answer.messages() {
                envelopes.push(serde_json::from_str(message.body().unwrap()).unwrap());
            }
            let drained = answer.messages().is_empty() && !envelopes.is_empty();
            if drained || std::time::Instant::now() > deadline {
                break;
            }
        }
        envelopes.sort_by_key(|e| e["Timestamp"].as_str().unwrap_or_default().to_owned());
        envelopes
    }

    /// What SNS delivered to the diagnosis topic's email subscribers.
    pub fn mailbox(&self) -> Vec<Value> {
        let answer = http(self.endpoint(), "GET", "/_alarm_triage/mailbox", "");
        let body = answer.split("\r\n\r\n").nth(1).unwrap_or("{}");
        let parsed: Value = serde_json::from_str(body).unwrap();
        parsed["messages"].as_array().cloned().unwrap_or_default()
    }

    /// Every file the stack wrote its logs to.
    pub fn log_files(&self) -> Vec<PathBuf> {
        std::fs::read_dir(&self.state)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "log" || e == "jsonl"))
            .collect()
    }

    /// The last lines of one of the stack's logs, for failure messages.
    pub fn log(&self, name: &str) -> String {
        let text =
            std::fs::read_to_string(self.state.join(format!("{name}.log"))).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(40)..].join("\n")
    }
}

impl Drop for LocalWorld {
    fn drop(&mut self) {
        let _ = Command::new(python())
            .arg(repo_root().join("infra/local/stack.py"))
            .arg("down")
            .arg("--state")
            .arg(&self.state)
            .output();
    }
}

fn unique() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// A minimal HTTP/1.1 request to a loopback endpoint; returns the raw answer.
pub fn http(base: &str, method: &str, path: &str, body: &str) -> String {
    http_sending(base, method, path, &[], body)
}

/// A bodiless request with extra headers (a forged signature).
#[allow(dead_code)] // not every test binary sends headers
pub fn http_with_headers(base: &str, method: &str, path: &str, headers: &[(&str, &str)]) -> String {
    http_sending(base, method, path, headers, "")
}

/// A POST of `body` with exactly these headers to a full loopback URL
/// (`http://127.0.0.1:PORT/path`); returns the status and the body.
#[allow(dead_code)] // not every test binary posts raw requests
pub fn post_raw(url: &str, headers: &[(&str, &str)], body: &[u8]) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.trim_start_matches("http://");
    let (authority, path) = rest
        .split_once('/')
        .map_or((rest, "/".to_owned()), |(a, p)| (a, format!("/{p}")));
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(30)))
        .unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        // HTTP/1.0: the answer ends with the connection, never chunked.
        "POST {path} HTTP/1.0\r\nHost: {authority}\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .unwrap();
    stream.write_all(body).unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8_lossy(&answer).into_owned();
    let status = answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = answer
        .split_once("\r\n\r\n")
        .map_or(String::new(), |(_, b)| b.to_owned());
    (status, body)
}

fn http_sending(
    base: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> String {
    use std::io::{Read, Write};
    let authority = base.trim_start_matches("http://").trim_end_matches('/');
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let extra: String = headers
        .iter()
        .map(|(k, v)| format!("{k}: {v}\r\n"))
        .collect();
    write!(
        stream,
        "{method} {path} HTTP/1.1\r\nHost: {authority}\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// The local Slack (infra/local/slack_api.py): answers like Slack, records requests.
#[derive(Debug)]
pub struct LocalSlack {
    pub url: String,
    child: std::process::Child,
    /// Webhook URLs by channel.
    pub webhooks: HashMap<String, String>,
    pub bot_token: String,
    _dir: PathBuf,
}

impl LocalSlack {
    /// Starts a Slack with webhooks for `channels` and one bot token.
    pub fn start(channels: &[&str]) -> Self {
        let dir =
            repo_root()
                .join("target/slack")
                .join(format!("{}-{}", std::process::id(), unique()));
        std::fs::create_dir_all(&dir).unwrap();
        let paths: HashMap<String, String> = channels
            .iter()
            .enumerate()
            .map(|(i, c)| {
                (
                    (*c).to_owned(),
                    format!("/services/T0TEST/B0{i}/secret-{}-{i}", unique()),
                )
            })
            .collect();
        let bot_token = format!("xoxb-test-{}", unique());
        let config = serde_json::json!({
            "webhooks": paths.iter().map(|(c, p)| (p.clone(), Value::from(c.clone()))).collect::<serde_json::Map<_, _>>(),
            "bot_token": bot_token,
            "channels": {"#alerts": "C0ALERTS01", "#oncall": "C0ONCALL01"},
        });
        let config_path = dir.join("slack.json");
        std::fs::write(&config_path, config.to_string()).unwrap();
        // The server picks its own port and writes it once it listens: a port
        // picked here and freed again could be taken by another test's server
        // before Slack binds it (a connection reset, once in a few runs).
        let port_file = dir.join("port");
        let mut child = Command::new(python())
            .arg(repo_root().join("infra/local/slack_api.py"))
            .arg("--port-file")
            .arg(&port_file)
            .arg("--config")
            .arg(&config_path)
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
        let port: u16 = loop {
            if let Some(port) = std::fs::read_to_string(&port_file)
                .ok()
                .and_then(|p| p.trim().parse().ok())
            {
                break port;
            }
            assert!(
                child.try_wait().unwrap().is_none(),
                "slack_api.py exited before listening"
            );
            assert!(
                std::time::Instant::now() < deadline,
                "slack_api.py did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        };
        let url = format!("http://127.0.0.1:{port}");
        let webhooks = paths
            .into_iter()
            .map(|(c, p)| (c, format!("{url}{p}")))
            .collect();
        LocalSlack {
            url,
            child,
            webhooks,
            bot_token,
            _dir: dir,
        }
    }

    /// Answers the next requests with these (status, Retry-After, body) before serving normally.
    pub fn script(&self, answers: Value) {
        let body = serde_json::json!({ "answers": answers }).to_string();
        http(&self.url, "POST", "/_recorder/script", &body);
    }

    /// Everything received so far.
    pub fn requests(&self) -> Vec<Value> {
        requests_at(&self.url)
    }
}

/// The requests a local Slack at `url` recorded.
pub fn requests_at(url: &str) -> Vec<Value> {
    let answer = http(url, "GET", "/_recorder/requests", "");
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or("{}");
    let parsed: Value = serde_json::from_str(body).unwrap();
    parsed["requests"].as_array().cloned().unwrap_or_default()
}

impl Drop for LocalSlack {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
