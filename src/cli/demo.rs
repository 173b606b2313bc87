//! `shardlite demo [DIR]`: the order-history sample, without building the examples.

use std::path::PathBuf;

use clap::Args;

use crate::error::{Error, Result};

/// Arguments of `shardlite demo`.
#[derive(Debug, Args)]
pub struct DemoArgs {
    /// Keep the sample's files in DIR/shards/ (replacing any there); without it they go to a
    /// temporary folder that is removed afterwards.
    dir: Option<PathBuf>,
}

pub async fn run(args: &DemoArgs) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match &args.dir {
        Some(dir) => {
            crate::demo::order_history(dir, &mut out).await?;
            println!();
            println!("Files kept in {}", dir.display());
            Ok(())
        }
        None => {
            let temp = std::env::temp_dir().join(format!("shardlite-demo-{}", uuid::Uuid::new_v4()));
            let outcome = crate::demo::order_history(&temp, &mut out).await;
            let removed = std::fs::remove_dir_all(&temp).map_err(|source| Error::Io {
                what: "the sample's temporary folder".to_owned(),
                source,
            });
            outcome.and(removed)?;
            println!();
            println!(
                "The sample's files were in a temporary folder, removed now; `shardlite demo demo` keeps them \
                 in demo/shards/ (master catalog: demo/shards/master.db)"
            );
            Ok(())
        }
    }
}
