//! `alarm-triage replay EVENT_FILE`: runs the Lambda's pipeline on a captured
//! event and prints the result. `alarm-triage accuracy`: how often the
//! diagnoses' causes held, by the answers people gave in Slack. Exit codes: 0 diagnosed (or ignored), 2 the
//! input is not something this bot handles, 1 internal failure.
// Gathering nests many async steps; its future is deeper than the default limit.
#![recursion_limit = "256"]

use std::path::PathBuf;
use std::process::ExitCode;

use alarm_triage::adapters::{AwsSources, Destinations, with_call_limits};
use alarm_triage::config::Config;
use alarm_triage::diagnosis::Diagnosis;
use alarm_triage::evidence::Collection;
use alarm_triage::pipeline::{Now, Outcome, Triage};
use alarm_triage::publish::{DiagnosisPublisher, NoPublisher};
use alarm_triage::render;
use alarm_triage::telemetry::{LogFormat, init_with_default};
use anyhow::Context;
use clap::{Parser, Subcommand, ValueEnum};

#[derive(Parser)]
#[command(
    name = "alarm-triage",
    version,
    about = "Diagnoses CloudWatch alarms; never changes anything"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the diagnose pipeline on a captured SNS event and prints the report.
    Replay {
        /// A Lambda SNS event, an SNS HTTP notification, or a bare alarm message (JSON).
        /// With --world and no file, the world's own alarm is delivered and replayed.
        #[arg(required_unless_present = "world")]
        event_file: Option<PathBuf>,
        /// Start the local world in DIR first (tests/worlds/<name>) and read from it; stopped afterwards.
        #[arg(long, value_name = "DIR", conflicts_with = "offline")]
        world: Option<PathBuf>,
        /// Read nothing from AWS: every evidence source is reported as not collected.
        #[arg(long)]
        offline: bool,
        /// Output rendering.
        #[arg(long, value_enum, default_value_t = Format::Text)]
        format: Format,
        /// Treat this instant (RFC 3339) as now; default: the transition's own time.
        #[arg(long, value_parser = parse_now)]
        now: Option<chrono::DateTime<chrono::Utc>>,
        /// Also write every rendering (diagnosis.json, email.txt, slack.json, chat.json) and the charts (latency.png, pods-cpu.png) into this directory.
        #[arg(long, value_name = "DIR")]
        out_dir: Option<PathBuf>,
        /// Also publish to DIAGNOSIS_TOPIC_ARN / DIAGNOSIS_QUEUE_URL (the people
        /// subscribed to them are paged). Without it a replay only prints.
        #[arg(long, conflicts_with = "offline")]
        publish: bool,
        /// The default; kept so that older scripts still run.
        #[arg(long, hide = true, conflicts_with = "publish")]
        no_publish: bool,
    },
    /// How often the named causes held, by the verdicts people gave in Slack
    /// (reads the feedback table; changes nothing).
    Accuracy {
        /// The feedback table (default: $FEEDBACK_TABLE).
        #[arg(long, env = "FEEDBACK_TABLE")]
        table: String,
        /// How far back: 30d, 12h, 90m.
        #[arg(long, default_value = "30d", value_parser = parse_span)]
        since: chrono::Duration,
        /// Rows per finding id, per alarm or per culprit service.
        #[arg(long, value_enum, default_value_t = By::Finding)]
        by: By,
    },
    /// Ranks the alarms that cost attention without telling anything: flapping,
    /// stuck in ALARM, thresholds inside the normal range, firing with no
    /// supported cause, never firing; each with a suggestion (read-only).
    Digest {
        /// How far back: 7d, 30d, 12h.
        #[arg(long, default_value = "7d", value_parser = parse_span)]
        since: chrono::Duration,
        /// Only alarms whose names start with this.
        #[arg(long)]
        prefix: Option<String>,
        /// The Slack thread table, for diagnoses that named no cause (optional).
        #[arg(long, env = "SLACK_THREAD_TABLE")]
        thread_table: Option<String>,
    },
    /// Draws the charts of a saved diagnosis (the JSON a replay or the diagnosis queue holds) as PNG files.
    Charts {
        /// A diagnosis (schema alarm-triage/diagnosis/v1), as JSON.
        diagnosis_file: PathBuf,
        /// Where to write latency.png and pods-cpu.png.
        #[arg(long, value_name = "DIR")]
        out_dir: PathBuf,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum By {
    Finding,
    Alarm,
    Service,
}

#[derive(Clone, Copy, ValueEnum)]
enum Format {
    Json,
    Text,
    Slack,
    Chat,
}

fn main() -> ExitCode {
    // A person reading a report wants warnings, not the pipeline's info lines.
    init_with_default(LogFormat::Text, "warn");
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("alarm-triage: cannot start the async runtime: {e}");
            return ExitCode::from(1);
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("alarm-triage: {e:#}");
            ExitCode::from(1)
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let (event_file, offline, format, now, out_dir, publish, world) = match cli.command {
        Command::Charts {
            diagnosis_file,
            out_dir,
        } => return draw_charts(&diagnosis_file, &out_dir),
        Command::Accuracy { table, since, by } => return accuracy(table, since, by).await,
        Command::Digest {
            since,
            prefix,
            thread_table,
        } => return digest(since, prefix, thread_table).await,
        Command::Replay {
            event_file,
            offline,
            format,
            now,
            out_dir,
            publish,
            no_publish: _,
            world,
        } => (event_file, offline, format, now, out_dir, publish, world),
    };
    replay(event_file, offline, format, now, out_dir, publish, world).await
}

/// `accuracy`: reads the feedback table and prints precision per finding, alarm or service.
async fn accuracy(table: String, since: chrono::Duration, by: By) -> anyhow::Result<ExitCode> {
    use alarm_triage::feedback::FeedbackStore;
    use alarm_triage::feedback::accuracy::{Grouping, accuracy, render};
    let aws = with_call_limits(aws_config::from_env(), std::time::Duration::from_secs(10))
        .load()
        .await;
    let store = alarm_triage::adapters::dynamodb::feedback::DynamoDbFeedback::new(&aws, table);
    let from = chrono::Utc::now() - since;
    let (records, answers) = store.everything_since(from).await?;
    let grouping = match by {
        By::Finding => Grouping::Finding,
        By::Alarm => Grouping::Alarm,
        By::Service => Grouping::Service,
    };
    print!("{}", render(&accuracy(&records, &answers, from, grouping)));
    Ok(ExitCode::SUCCESS)
}

/// `digest`: reads every metric alarm's span and prints the ranked noise.
async fn digest(
    since: chrono::Duration,
    prefix: Option<String>,
    thread_table: Option<String>,
) -> anyhow::Result<ExitCode> {
    use alarm_triage::adapters::cloudwatch::CloudWatchSource;
    use alarm_triage::adapters::dynamodb::DynamoDbThreads;
    let aws = with_call_limits(aws_config::from_env(), std::time::Duration::from_secs(20))
        .load()
        .await;
    let cloudwatch = CloudWatchSource::new(aws_sdk_cloudwatch::Client::new(&aws));
    let threads = thread_table.map(|t| DynamoDbThreads::new(&aws, t));
    let now = chrono::Utc::now();
    let from = now - since;
    let alarms = alarm_triage::noise_survey::survey(
        &cloudwatch,
        threads.as_ref(),
        prefix.as_deref(),
        from,
        now,
    )
    .await?;
    let entries = alarm_triage::digest::digest(&alarms, from, now);
    print!(
        "{}",
        alarm_triage::digest::render(&entries, alarms.len(), from, now)
    );
    Ok(ExitCode::SUCCESS)
}

/// `30d`, `12h`, `90m`: a span back from now.
fn parse_span(text: &str) -> Result<chrono::Duration, String> {
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let n: i64 = number
        .parse()
        .ok()
        .filter(|n| (1..=3650).contains(n))
        .ok_or_else(|| format!("{text:?} is not a span like 30d, 12h or 90m"))?;
    match unit {
        "d" => Ok(chrono::Duration::days(n)),
        "h" => Ok(chrono::Duration::hours(n)),
        "m" => Ok(chrono::Duration::minutes(n)),
        _ => Err(format!("{text:?} is not a span like 30d, 12h or 90m")),
    }
}

/// `charts`: reads a diagnosis and writes its charts.
fn draw_charts(file: &std::path::Path, out_dir: &std::path::Path) -> anyhow::Result<ExitCode> {
    let text =
        std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let d: Diagnosis = serde_json::from_str(&text).with_context(|| {
        format!(
            "{} is not a diagnosis (expected the JSON of schema {})",
            file.display(),
            alarm_triage::diagnosis::SCHEMA
        )
    })?;
    std::fs::create_dir_all(out_dir)
        .with_context(|| format!("cannot create {}", out_dir.display()))?;
    let charts = alarm_triage::charts::charts(&d)?;
    if charts.is_empty() {
        eprintln!(
            "alarm-triage: {} has no series to draw (no target-group breakdown, no pod series)",
            d.id
        );
    }
    for chart in charts {
        let path = out_dir.join(&chart.file_name);
        std::fs::write(&path, &chart.png)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!(
            "alarm-triage: {} written ({} bytes)",
            path.display(),
            chart.png.len()
        );
    }
    Ok(ExitCode::SUCCESS)
}

#[allow(clippy::too_many_arguments)]
async fn replay(
    event_file: Option<PathBuf>,
    offline: bool,
    format: Format,
    now: Option<chrono::DateTime<chrono::Utc>>,
    out_dir: Option<PathBuf>,
    publish: bool,
    world: Option<PathBuf>,
) -> anyhow::Result<ExitCode> {
    let local = world.as_deref().map(LocalWorld::start).transpose()?;
    let event_file = match (event_file, &local) {
        (Some(file), _) => file,
        (None, Some(local)) => local.deliver()?,
        (None, None) => anyhow::bail!("an EVENT_FILE is needed without --world"),
    };
    let bytes = std::fs::read(&event_file)
        .with_context(|| format!("cannot read {}", event_file.display()))?;
    let now = now.map_or(Now::TransitionTime, Now::At);
    let outcomes = if offline {
        let config = Config::from_lookup(|name| match name {
            "AWS_REGION" => Some("offline".to_owned()),
            other => std::env::var(other).ok(),
        })?;
        let triage = Triage::<AwsSources, NoPublisher> {
            collection: Collection::Offline,
            publisher: NoPublisher,
            budget: config.budget,
            classifier: config.classifier,
        };
        triage.handle_bytes(&bytes, now).await
    } else {
        let (config, aws) = match &local {
            Some(local) => {
                let config = Config::from_lookup(|k| {
                    local.env.get(k).cloned().or_else(|| std::env::var(k).ok())
                })?;
                let aws = with_call_limits(
                    aws_config::defaults(aws_config::BehaviorVersion::latest()),
                    config.budget.per_source,
                )
                .endpoint_url(
                    local
                        .env
                        .get("AWS_ENDPOINT_URL")
                        .cloned()
                        .unwrap_or_default(),
                )
                .region(aws_config::Region::new(config.region.clone()))
                // The world's function credentials (a role in an organisation's
                // central account), else moto's dummy ones.
                .credentials_provider(aws_sdk_cloudwatch::config::Credentials::new(
                    local.var_or("AWS_ACCESS_KEY_ID", "testing"),
                    local.var_or("AWS_SECRET_ACCESS_KEY", "testing"),
                    local.env.get("AWS_SESSION_TOKEN").cloned(),
                    None,
                    "local-world",
                ))
                .load()
                .await;
                (config, aws)
            }
            None => {
                let config = Config::from_env()?;
                let aws = with_call_limits(aws_config::from_env(), config.budget.per_source)
                    .region(aws_config::Region::new(config.region.clone()))
                    .load()
                    .await;
                (config, aws)
            }
        };
        let sources = AwsSources::from_config(&aws, &config);
        let destinations = if publish {
            Destinations::new(
                &aws,
                config.diagnosis_topic_arn.clone(),
                config.diagnosis_queue_url.clone(),
            )
        } else {
            if config.diagnosis_topic_arn.is_some() || config.diagnosis_queue_url.is_some() {
                eprintln!(
                    "alarm-triage: printing only; pass --publish to send to DIAGNOSIS_TOPIC_ARN / DIAGNOSIS_QUEUE_URL"
                );
            }
            Destinations::default()
        };
        live(sources, destinations, config, &bytes, now).await
    };
    let outcomes = match outcomes {
        Ok(o) => o,
        Err(e) if e.is_rejection() => {
            eprintln!("alarm-triage: not handled: {e}");
            return Ok(ExitCode::from(2));
        }
        Err(e) => return Err(e.into()),
    };

    let mut code = ExitCode::SUCCESS;
    let mut first = true;
    for outcome in outcomes {
        match outcome {
            Outcome::Report {
                diagnosis: d,
                published,
            } => {
                for receipt in &published {
                    eprintln!("alarm-triage: published {} as {receipt}", d.id);
                }
                // JSON Lines: one compact document per line, however many records.
                if let Format::Json = format {
                    println!("{}", d.to_json()?);
                } else {
                    if !first {
                        println!();
                    }
                    println!("{}", rendered(&d, format)?);
                }
                first = false;
                if let Some(dir) = &out_dir {
                    write_renderings(&d, dir)?;
                }
            }
            Outcome::Ignored {
                alarm_name,
                transition,
            } => {
                eprintln!(
                    "alarm-triage: ignored: {alarm_name} went {transition}, which needs no report"
                );
            }
            Outcome::Rejected(e) if e.is_rejection() => {
                eprintln!("alarm-triage: not handled: {e}");
                code = ExitCode::from(2);
            }
            Outcome::Rejected(e) => return Err(e.into()),
            Outcome::Failed {
                diagnosis_id,
                error,
                ..
            } => {
                eprintln!("alarm-triage: diagnosis {diagnosis_id} was not published: {error}");
                code = ExitCode::from(1);
            }
        }
    }
    Ok(code)
}

/// A local world started for this replay, stopped when dropped.
struct LocalWorld {
    root: PathBuf,
    state: PathBuf,
    env: std::collections::HashMap<String, String>,
}

impl LocalWorld {
    fn var_or(&self, key: &str, default: &str) -> String {
        self.env
            .get(key)
            .cloned()
            .unwrap_or_else(|| default.to_owned())
    }
}

impl LocalWorld {
    fn start(dir: &std::path::Path) -> anyhow::Result<Self> {
        let root = std::env::current_dir()?
            .ancestors()
            .find(|p| p.join("infra/local/stack.py").exists())
            .map(std::path::Path::to_path_buf)
            .context(
                "--world needs to run inside the alarm-triage repository (infra/local/stack.py)",
            )?;
        let state = root.join(".world/replay");
        let output = std::process::Command::new(root.join(".venv/bin/python"))
            .arg(root.join("infra/local/stack.py"))
            .args(["up", "--json", "--state"])
            .arg(&state)
            .arg(dir)
            .output()
            .context("cannot run infra/local/stack.py (run scripts/setup.sh first)")?;
        if !output.status.success() {
            anyhow::bail!(
                "the local world did not start: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        let started: serde_json::Value = serde_json::from_slice(&output.stdout)?;
        let env = started["env"]
            .as_object()
            .context("stack.py printed no environment")?
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap_or_default().to_owned()))
            .collect();
        eprintln!("alarm-triage: local world {} is up", dir.display());
        Ok(LocalWorld { root, state, env })
    }

    fn deliver(&self) -> anyhow::Result<PathBuf> {
        let output = std::process::Command::new(self.root.join(".venv/bin/python"))
            .arg(self.root.join("infra/local/stack.py"))
            .args(["deliver", "--state"])
            .arg(&self.state)
            .output()?;
        if !output.status.success() {
            anyhow::bail!(
                "the world's alarm was not delivered: {}",
                String::from_utf8_lossy(&output.stderr).trim()
            );
        }
        Ok(PathBuf::from(
            String::from_utf8_lossy(&output.stdout).trim(),
        ))
    }
}

impl Drop for LocalWorld {
    fn drop(&mut self) {
        let _ = std::process::Command::new(self.root.join(".venv/bin/python"))
            .arg(self.root.join("infra/local/stack.py"))
            .args(["down", "--state"])
            .arg(&self.state)
            .output();
    }
}

async fn live<P: DiagnosisPublisher>(
    sources: AwsSources,
    publisher: P,
    config: Config,
    bytes: &[u8],
    now: Now,
) -> alarm_triage::Result<Vec<Outcome>> {
    let triage = Triage {
        collection: Collection::Live(sources),
        publisher,
        budget: config.budget,
        classifier: config.classifier,
    };
    triage.handle_bytes(bytes, now).await
}

/// Writes every rendering of `d` into `dir/<diagnosis id>/`.
fn write_renderings(d: &Diagnosis, dir: &std::path::Path) -> anyhow::Result<()> {
    let dir = dir.join(d.id.as_str());
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    for (file, format) in [
        ("diagnosis.json", Format::Json),
        ("email.txt", Format::Text),
        ("slack.json", Format::Slack),
        ("chat.json", Format::Chat),
    ] {
        let path = dir.join(file);
        std::fs::write(&path, rendered(d, format)? + "\n")
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    // The charts notify-slack uploads into the alarm's thread.
    for chart in alarm_triage::charts::charts(d)? {
        let path = dir.join(&chart.file_name);
        std::fs::write(&path, &chart.png)
            .with_context(|| format!("cannot write {}", path.display()))?;
    }
    eprintln!(
        "alarm-triage: renderings of {} written to {}",
        d.id,
        dir.display()
    );
    Ok(())
}

fn rendered(d: &Diagnosis, format: Format) -> anyhow::Result<String> {
    Ok(match format {
        Format::Json => d.to_json_pretty()?,
        Format::Text => render::text::render(d).trim_end().to_owned(),
        Format::Slack => serde_json::to_string_pretty(&render::slack::render(d))?,
        Format::Chat => serde_json::to_string_pretty(&render::chat::render(d))?,
    })
}

/// `--now`: RFC 3339, within the years a notification may carry.
fn parse_now(text: &str) -> Result<chrono::DateTime<chrono::Utc>, String> {
    use alarm_triage::alarm::limits;
    let t = chrono::DateTime::parse_from_rfc3339(text)
        .map_err(|e| {
            format!("{text:?} is not an RFC 3339 instant ({e}); e.g. 2026-11-27T15:00:00Z")
        })?
        .with_timezone(&chrono::Utc);
    if !limits::instant_in_range(t) {
        return Err(format!(
            "{text:?} is outside {} to {}",
            limits::EARLIEST,
            limits::LATEST
        ));
    }
    Ok(t)
}
