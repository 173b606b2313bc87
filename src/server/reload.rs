//! Reloading the API key file on SIGHUP, without a restart and without dropping connections.

use super::ServerState;

/// Reads the key file again each time the process receives SIGHUP (Unix only). A file that
/// cannot be used leaves the keys in use unchanged, and the log says why; a daemon started
/// without `--api-keys` logs that there is nothing to reload.
pub fn reload_api_keys_on_sighup(state: &ServerState) {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut hangups = match signal(SignalKind::hangup()) {
            Ok(hangups) => hangups,
            Err(err) => {
                tracing::error!(error = %err, "cannot listen for SIGHUP; the API key file will not reload");
                return;
            }
        };
        let state = state.clone();
        tokio::spawn(async move {
            while hangups.recv().await.is_some() {
                if state.config().api_keys_file.is_none() {
                    continue;
                }
                match state.reload_api_keys() {
                    Ok(keys) => tracing::info!(keys, "SIGHUP: reloaded the API key file"),
                    Err(err) => {
                        tracing::warn!(error = %err, "SIGHUP: kept the previous API keys, the key file cannot be used");
                    }
                }
            }
        });
    }
    #[cfg(not(unix))]
    let _ = state;
}
