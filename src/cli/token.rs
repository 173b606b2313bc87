//! `shardlite token KEYSPACE KEY [--buckets N] [--json]`.

use clap::Args;

use crate::error::{Error, Result};
use crate::map::MAX_VIRTUAL_BUCKETS;
use crate::routing::{bucket_for_token, canonical_route_text, route_token};

/// Arguments of `shardlite token`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// The route keyspace, e.g. orders_by_month.
    keyspace: String,
    /// The route key, e.g. 2026-06.
    key: String,
    /// The virtual bucket count to compute the bucket for.
    #[arg(long, default_value_t = 4096)]
    buckets: u32,
    /// Print JSON: {"canonical", "token", "tokenHex", "bucket"}.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &TokenArgs) -> Result<()> {
    if args.buckets == 0 || args.buckets > MAX_VIRTUAL_BUCKETS {
        return Err(Error::invalid_argument(
            "--buckets",
            format!("must be between 1 and {MAX_VIRTUAL_BUCKETS} (got {})", args.buckets),
        ));
    }
    let canonical = canonical_route_text(&args.keyspace, &args.key)?;
    let token = route_token(&args.keyspace, &args.key)?;
    let bucket = bucket_for_token(token.0, args.buckets);
    if args.json {
        let out = serde_json::json!({
            "canonical": canonical,
            "token": token.0,
            "tokenHex": token.to_hex(),
            "bucket": bucket,
        });
        println!("{out}");
    } else {
        println!("canonical  {canonical}");
        println!("token      {token}");
        println!("tokenHex   {}", token.to_hex());
        println!("bucket     {bucket} (of {})", args.buckets);
    }
    Ok(())
}
