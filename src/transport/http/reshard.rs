//! Resharding (data moves, named migrations on the wire) through a daemon's REST endpoints.

use async_trait::async_trait;

use super::HttpClient;
use crate::data::{ReshardAdmin, ReshardBody, ReshardRequest, ReshardResult, ResumeRequest};
use crate::error::Result;

impl HttpClient {
    /// A migration's result: the daemon answers a rejected request with 400 and the result; in
    /// process that is a result (status `Rejected`), not an error.
    async fn started(&self, request: reqwest::RequestBuilder) -> Result<ReshardResult> {
        match self.call(request).await {
            Ok(response) => self.read_json(response).await,
            Err(failure) => failure.into_rejected_migration(),
        }
    }
}

#[async_trait]
impl ReshardAdmin for HttpClient {
    async fn start_migration(&self, request: &ReshardRequest) -> Result<ReshardResult> {
        let call = match ReshardBody::from(request.clone()) {
            ReshardBody::RouteKey(body) => self.post(&["sharding", "migrations", "exact-route-key"]).json(&body),
            ReshardBody::BucketRange(body) => self.post(&["sharding", "migrations", "bucket-range"]).json(&body),
        };
        self.started(call).await
    }

    async fn resume_migration(&self, migration_id: &str, options: &ResumeRequest) -> Result<ReshardResult> {
        self.json(
            self.post(&["sharding", "migrations", migration_id, "resume"])
                .json(options),
        )
        .await
    }

    async fn migration_progress(&self, migration_id: &str) -> Result<ReshardResult> {
        self.json(self.get(&["sharding", "migrations", migration_id])).await
    }

    async fn migrations(&self) -> Result<Vec<ReshardResult>> {
        self.json(self.get(&["sharding", "migrations", "checkpoints"])).await
    }

    async fn migration_history(&self) -> Result<Vec<ReshardResult>> {
        self.json(self.get(&["sharding", "migrations"])).await
    }

    async fn abandon_migration(&self, migration_id: &str) -> Result<ReshardResult> {
        self.json(self.post(&["sharding", "migrations", migration_id, "abandon"]))
            .await
    }
}
