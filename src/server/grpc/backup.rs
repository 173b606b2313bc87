//! The backup RPCs: a set taken into the daemon's own backup place, and the sets it holds, each
//! answered as the manifest's JSON text, as over REST.

use super::call::Call;
use crate::data::BackupManifest;
use crate::error::{Error, Result};
use crate::wire::proto as pb;

pub(super) async fn create(call: Call, _: pb::Empty) -> Result<pb::BackupSet> {
    let manifest = crate::server::backups::take_backup(&call.state).await?;
    Ok(pb::BackupSet {
        manifest_json: manifest_json(&manifest)?,
    })
}

pub(super) async fn list(call: Call, _: pb::Empty) -> Result<pb::BackupSetList> {
    let sets = crate::server::backups::backup_sets(&call.state).await?;
    Ok(pb::BackupSetList {
        manifest_json: sets.iter().map(manifest_json).collect::<Result<_>>()?,
    })
}

/// A backup manifest as the JSON text the REST surface answers.
fn manifest_json(manifest: &BackupManifest) -> Result<String> {
    serde_json::to_string(manifest).map_err(|source| Error::Json {
        what: "a backup manifest",
        source,
    })
}
