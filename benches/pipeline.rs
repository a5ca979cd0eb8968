//! Intake + classify + render throughput over every captured event in `events/`,
//! on one core (a current-thread runtime), offline, with the diagnose Lambda's
//! allocator. Four renderings per event (text, Slack, chat, JSON).

#![allow(clippy::unwrap_used, clippy::expect_used)] // a benchmark fails loudly

use std::hint::black_box;

use alarm_triage::classify::ClassifierConfig;
use alarm_triage::evidence::fake::StaticSources;
use alarm_triage::evidence::{Budget, Collection};
use alarm_triage::pipeline::{Now, Outcome, Triage};
use alarm_triage::publish::NoPublisher;
use alarm_triage::render;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};

/// The same allocator as the diagnose Lambda.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn events() -> Vec<Vec<u8>> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/events");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| std::fs::read(p).unwrap())
        .collect()
}

fn pipeline(c: &mut Criterion) {
    let events = events();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let triage = Triage::<StaticSources, NoPublisher> {
        collection: Collection::Offline,
        publisher: NoPublisher,
        budget: Budget::default(),
        classifier: ClassifierConfig::default(),
    };
    let mut group = c.benchmark_group("pipeline");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("intake_classify_render_all_events", |b| {
        b.iter(|| {
            for bytes in &events {
                let Ok(outcomes) =
                    runtime.block_on(triage.handle_bytes(bytes, Now::TransitionTime))
                else {
                    continue;
                };
                for outcome in outcomes {
                    if let Outcome::Report { diagnosis: d, .. } = outcome {
                        black_box(render::text::render(&d));
                        black_box(render::slack::render(&d));
                        black_box(render::chat::render(&d));
                        black_box(d.to_json().unwrap());
                    }
                }
            }
        });
    });
    group.finish();
}

criterion_group!(benches, pipeline);
criterion_main!(benches);
