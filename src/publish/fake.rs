//! An in-memory publisher for tests of the handler's error mapping: the
//! evidence layer's fakes stay on their side of delivery.

use std::sync::{Arc, Mutex};

use super::{DiagnosisPublisher, Outgoing};
use crate::error::Result;

/// Records what it was asked to publish; fails every publish when `fail` is set.
#[derive(Debug, Clone, Default)]
pub struct RecordingPublisher {
    pub sent: Arc<Mutex<Vec<Outgoing>>>,
    pub fail: bool,
}

impl DiagnosisPublisher for RecordingPublisher {
    async fn publish(&self, outgoing: &Outgoing) -> Result<Vec<String>> {
        if self.fail {
            return Err(crate::publish::failure(
                "sns",
                "the topic does not exist (NotFound)".to_owned(),
            ));
        }
        if let Ok(mut sent) = self.sent.lock() {
            sent.push(outgoing.clone());
        }
        Ok(vec![format!("recorded:{}", outgoing.diagnosis_id)])
    }
}
