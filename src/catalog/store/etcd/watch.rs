//! A watch of a catalog's map records: how activations reach every router without polling.
//!
//! The JSON gateway answers `POST /v3/watch` with a stream of JSON lines: first one saying the
//! watch was created, then one per batch of changes. The stream ends when the member goes away;
//! its owner then opens a new watch (on any endpoint) and reads the catalog again, so a change
//! made while it was disconnected is not missed.

use async_trait::async_trait;

use crate::catalog::store::MapChanges;
use crate::error::{Error, Result};

/// An open watch.
#[derive(Debug)]
pub(crate) struct EtcdWatch {
    response: reqwest::Response,
    buffer: Vec<u8>,
    address: String,
}

impl EtcdWatch {
    /// Waits for etcd to confirm the watch. Changes made after this returns are reported.
    pub(super) async fn open(response: reqwest::Response, address: String) -> Result<Self> {
        let mut watch = Self {
            response,
            buffer: Vec::new(),
            address,
        };
        // The first line confirms the watch; it carries no events.
        watch.next_line().await?;
        Ok(watch)
    }

    async fn next_line(&mut self) -> Result<Vec<u8>> {
        loop {
            if let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = self.buffer.drain(..=end).collect();
                if line.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                return Ok(line);
            }
            match self.response.chunk().await {
                Ok(Some(chunk)) => self.buffer.extend_from_slice(&chunk),
                // A last line without a newline.
                Ok(None) if !self.buffer.iter().all(u8::is_ascii_whitespace) => {
                    return Ok(std::mem::take(&mut self.buffer));
                }
                Ok(None) => return Err(self.ended("the stream ended")),
                Err(err) => return Err(self.ended(&err.to_string())),
            }
        }
    }

    fn ended(&self, reason: &str) -> Error {
        Error::CatalogUnavailable {
            reason: format!("the watch of {} ended: {reason}", self.address),
        }
    }
}

#[async_trait]
impl MapChanges for EtcdWatch {
    /// Waits for the next change to the map records. An error means the watch ended (the
    /// member went away or canceled it); open a new one.
    async fn changed(&mut self) -> Result<()> {
        loop {
            let line = self.next_line().await?;
            let events = super::client::watch_line(&line).map_err(|reason| self.ended(&reason))?;
            if !events.is_empty() {
                return Ok(());
            }
        }
    }
}
