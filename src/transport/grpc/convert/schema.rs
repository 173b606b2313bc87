//! Schema migrations across shards: migration sets, per-shard outcomes and schema status.

use super::pb;
use crate::data::{
    SchemaChange, SchemaMigrationReport, SchemaMigrationRequest, SchemaMigrationState, SchemaObjectDiff, SchemaScript,
    SchemaStatusReport, SchemaStep, ShardSchemaOutcome, ShardSchemaStatus,
};
use crate::error::{Error, Result};

convert_both_ways!(
    SchemaScript,
    pb::MigrationScript {
        version,
        description,
        sql
    }
);

convert_both_ways!(
    SchemaMigrationRequest,
    pb::MigrateShardSchemaRequest {
        migrations: list,
        dry_run,
        shard_ids,
    }
);

convert_both_ways!(
    SchemaStep,
    pb::MigrationStep {
        version,
        description,
        elapsed_ms,
    }
);

fn unknown(what: &str, value: i32) -> Error {
    Error::invalid_argument("gRPC message", format!("unknown {what} {value}"))
}

fn state_to_pb(state: SchemaMigrationState) -> i32 {
    use pb::ShardMigrationState as P;
    (match state {
        SchemaMigrationState::UpToDate => P::UpToDate,
        SchemaMigrationState::Migrated => P::Migrated,
        SchemaMigrationState::WouldMigrate => P::WouldMigrate,
        SchemaMigrationState::Failed => P::Failed,
    }) as i32
}

fn state_from_pb(state: i32) -> Result<SchemaMigrationState> {
    use pb::ShardMigrationState as P;
    match P::try_from(state) {
        Ok(P::UpToDate) => Ok(SchemaMigrationState::UpToDate),
        Ok(P::Migrated) => Ok(SchemaMigrationState::Migrated),
        Ok(P::WouldMigrate) => Ok(SchemaMigrationState::WouldMigrate),
        Ok(P::Failed) => Ok(SchemaMigrationState::Failed),
        Ok(P::Unspecified) | Err(_) => Err(unknown("shard migration state", state)),
    }
}

fn change_to_pb(change: SchemaChange) -> i32 {
    use pb::SchemaChange as P;
    (match change {
        SchemaChange::Missing => P::Missing,
        SchemaChange::Extra => P::Extra,
        SchemaChange::Different => P::Different,
    }) as i32
}

fn change_from_pb(change: i32) -> Result<SchemaChange> {
    use pb::SchemaChange as P;
    match P::try_from(change) {
        Ok(P::Missing) => Ok(SchemaChange::Missing),
        Ok(P::Extra) => Ok(SchemaChange::Extra),
        Ok(P::Different) => Ok(SchemaChange::Different),
        Ok(P::Unspecified) | Err(_) => Err(unknown("schema change", change)),
    }
}

impl From<ShardSchemaOutcome> for pb::ShardMigrationOutcome {
    fn from(o: ShardSchemaOutcome) -> Self {
        Self {
            shard_id: o.shard_id,
            state: state_to_pb(o.state),
            version_before: o.version_before,
            version_after: o.version_after,
            applied: o.applied.into_iter().map(Into::into).collect(),
            pending: o.pending.into_iter().map(Into::into).collect(),
            failed_version: o.failed_version,
            error: o.error,
            error_code: o.error_code,
        }
    }
}

impl TryFrom<pb::ShardMigrationOutcome> for ShardSchemaOutcome {
    type Error = Error;

    fn try_from(o: pb::ShardMigrationOutcome) -> Result<Self> {
        Ok(Self {
            shard_id: o.shard_id,
            state: state_from_pb(o.state)?,
            version_before: o.version_before,
            version_after: o.version_after,
            applied: o.applied.into_iter().map(Into::into).collect(),
            pending: o.pending.into_iter().map(Into::into).collect(),
            failed_version: o.failed_version,
            error: o.error,
            error_code: o.error_code,
        })
    }
}

impl From<SchemaMigrationReport> for pb::ShardSchemaMigrationReport {
    fn from(r: SchemaMigrationReport) -> Self {
        Self {
            target_version: r.target_version,
            dry_run: r.dry_run,
            shards: r.shards.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::ShardSchemaMigrationReport> for SchemaMigrationReport {
    type Error = Error;

    fn try_from(r: pb::ShardSchemaMigrationReport) -> Result<Self> {
        Ok(Self {
            target_version: r.target_version,
            dry_run: r.dry_run,
            shards: r.shards.into_iter().map(TryInto::try_into).collect::<Result<_>>()?,
        })
    }
}

impl From<ShardSchemaStatus> for pb::ShardSchemaStatus {
    fn from(s: ShardSchemaStatus) -> Self {
        Self {
            shard_id: s.shard_id,
            applied_versions: s.applied_versions,
            dirty_version: s.dirty_version,
            fingerprint: s.fingerprint,
            drift: s.drift,
            missing_versions: s.missing_versions,
            extra_versions: s.extra_versions,
            differences: s
                .differences
                .into_iter()
                .map(|d| pb::SchemaObjectDiff {
                    object_type: d.object_type,
                    name: d.name,
                    change: change_to_pb(d.change),
                })
                .collect(),
            error: s.error,
            error_code: s.error_code,
        }
    }
}

impl TryFrom<pb::ShardSchemaStatus> for ShardSchemaStatus {
    type Error = Error;

    fn try_from(s: pb::ShardSchemaStatus) -> Result<Self> {
        Ok(Self {
            shard_id: s.shard_id,
            applied_versions: s.applied_versions,
            dirty_version: s.dirty_version,
            fingerprint: s.fingerprint,
            drift: s.drift,
            missing_versions: s.missing_versions,
            extra_versions: s.extra_versions,
            differences: s
                .differences
                .into_iter()
                .map(|d| {
                    Ok(SchemaObjectDiff {
                        object_type: d.object_type,
                        name: d.name,
                        change: change_from_pb(d.change)?,
                    })
                })
                .collect::<Result<_>>()?,
            error: s.error,
            error_code: s.error_code,
        })
    }
}

impl From<SchemaStatusReport> for pb::ShardSchemaStatusReport {
    fn from(r: SchemaStatusReport) -> Self {
        Self {
            majority_versions: r.majority_versions,
            majority_fingerprint: r.majority_fingerprint,
            shards: r.shards.into_iter().map(Into::into).collect(),
        }
    }
}

impl TryFrom<pb::ShardSchemaStatusReport> for SchemaStatusReport {
    type Error = Error;

    fn try_from(r: pb::ShardSchemaStatusReport) -> Result<Self> {
        Ok(Self {
            majority_versions: r.majority_versions,
            majority_fingerprint: r.majority_fingerprint,
            shards: r.shards.into_iter().map(TryInto::try_into).collect::<Result<_>>()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unspecified_state_is_refused() {
        let outcome = pb::ShardMigrationOutcome::default();
        let err = ShardSchemaOutcome::try_from(outcome).unwrap_err();
        assert!(err.to_string().contains("shard migration state 0"), "{err}");
        let diff = pb::ShardSchemaStatus {
            differences: vec![pb::SchemaObjectDiff::default()],
            ..Default::default()
        };
        assert!(ShardSchemaStatus::try_from(diff).is_err());
    }
}
