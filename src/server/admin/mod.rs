//! The admin workspace at `/admin`: a page for operators, served by the daemon itself.
//!
//! The page and its assets (plain HTML, CSS and JavaScript modules, no build step) are compiled
//! into the binary, so nothing is fetched from anywhere but the daemon. The page calls only the
//! daemon's public REST API, the same one every other client uses.
//!
//! **The API key.** `/admin` and `/admin/assets/...` are served without the API key: a browser
//! cannot attach a custom header to a navigation, the page holds no data and no secret, and it
//! is the same for every daemon. Every API call the page makes does need the key when one is
//! configured: the page asks for it, keeps it in `sessionStorage` only (gone when the tab
//! closes), sends it in the configured API-key header (which it learns from the daemon's 401
//! challenge) and never puts it in a URL.
//!
//! **Hardening.** Every answer here carries a strict Content-Security-Policy ([`CSP`]: no inline
//! script or style, nothing from another origin, no framing), `X-Frame-Options: DENY`,
//! `X-Content-Type-Options: nosniff` and `Referrer-Policy: no-referrer`. The page writes values
//! from the database with `textContent` only, never as HTML.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderMap, HeaderName, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use utoipa::openapi::path::{HttpMethod, OperationBuilder};
use utoipa::openapi::response::ResponseBuilder;
use utoipa::openapi::schema::{ObjectBuilder, Type};
use utoipa::openapi::security::SecurityRequirement;
use utoipa::openapi::{Content, OpenApi};

/// The Content-Security-Policy of the page and its assets: everything from the daemon itself,
/// nothing inline, no plugins, no framing, no form posts, no `<base>` rewriting.
pub const CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; \
    connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The path of the page.
pub const PAGE_PATH: &str = "/admin";

/// One file of the workspace, compiled into the binary.
struct Asset {
    name: &'static str,
    content_type: &'static str,
    body: &'static [u8],
}

macro_rules! assets {
    ($($name:literal => $content_type:literal),* $(,)?) => {
        &[$(Asset {
            name: $name,
            content_type: $content_type,
            body: include_bytes!(concat!("assets/", $name)),
        }),*]
    };
}

/// The page's assets, served under `/admin/assets/`.
static ASSETS: &[Asset] = assets! {
    "admin.css" => "text/css; charset=utf-8",
    "main.js" => "text/javascript; charset=utf-8",
    "api.js" => "text/javascript; charset=utf-8",
    "dom.js" => "text/javascript; charset=utf-8",
    "shards.js" => "text/javascript; charset=utf-8",
    "catalog.js" => "text/javascript; charset=utf-8",
    "migrations.js" => "text/javascript; charset=utf-8",
    "directories.js" => "text/javascript; charset=utf-8",
    "route.js" => "text/javascript; charset=utf-8",
    "diagnostics.js" => "text/javascript; charset=utf-8",
    "atomic.js" => "text/javascript; charset=utf-8",
    "backups.js" => "text/javascript; charset=utf-8",
    "favicon.svg" => "image/svg+xml",
};

const INDEX_HTML: &[u8] = include_bytes!("assets/index.html");

/// Adds `GET /admin` to the daemon's OpenAPI document: an HTML page that needs no API key (the
/// calls it makes do), so its operation declares an empty security requirement.
pub fn document(doc: &mut OpenApi) {
    let html = Content::new(Some(ObjectBuilder::new().schema_type(Type::String)));
    let operation = OperationBuilder::new()
        .tag("meta")
        .operation_id(Some("getAdminWorkspace"))
        .summary(Some("The admin workspace"))
        .description(Some(
            "The operators' page: shards, the bucket space, the catalog, migrations, route previews, \
             route-aware tabs, diagnostics and unresolved atomic transactions. Served without the API key; every API call the page makes \
             sends it. Assets are under /admin/assets/.",
        ))
        // An empty requirement: no API key, whatever the document's default.
        .security(SecurityRequirement::default())
        .response(
            "200",
            ResponseBuilder::new()
                .description("The page (text/html), with a strict Content-Security-Policy")
                .content("text/html", html)
                .build(),
        )
        .build();
    doc.paths
        .add_path_operation(PAGE_PATH, vec![HttpMethod::Get], operation);
}

/// The routes of the workspace: `/admin` (and `/admin/`) and `/admin/assets/{name}`.
///
/// They sit outside the API-key check on purpose (see the module docs) and answer only `GET`
/// and `HEAD`.
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route(PAGE_PATH, get(page))
        .route("/admin/", get(page))
        .route("/admin/assets/{name}", get(asset))
}

async fn page() -> Response {
    hardened(StatusCode::OK, "text/html; charset=utf-8", INDEX_HTML)
}

async fn asset(Path(name): Path<String>) -> Response {
    match ASSETS.iter().find(|asset| asset.name == name) {
        Some(asset) => hardened(StatusCode::OK, asset.content_type, asset.body),
        None => hardened(
            StatusCode::NOT_FOUND,
            "text/plain; charset=utf-8",
            b"no such asset of the admin workspace\n",
        ),
    }
}

/// A response with the workspace's security headers.
fn hardened(status: StatusCode, content_type: &'static str, body: &'static [u8]) -> Response {
    let mut headers = HeaderMap::new();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        HeaderName::from_static("cross-origin-opener-policy"),
        HeaderValue::from_static("same-origin"),
    );
    (status, headers, body).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    const JS: &str = "text/javascript; charset=utf-8";

    #[test]
    fn every_module_the_page_imports_is_served() {
        let served = |name: &str| ASSETS.iter().any(|asset| asset.name == name);
        let index = std::str::from_utf8(INDEX_HTML).unwrap_or_default();
        let mut sources = vec![index];
        sources.extend(
            ASSETS
                .iter()
                .filter(|asset| asset.content_type == JS)
                .map(|asset| std::str::from_utf8(asset.body).unwrap_or_default()),
        );
        for source in sources {
            for quoted in source.split(['"', '\'']) {
                if let Some(name) = quoted
                    .strip_prefix("./")
                    .or_else(|| quoted.strip_prefix("/admin/assets/"))
                {
                    assert!(served(name), "'{quoted}' is referenced but not served");
                }
            }
        }
    }

    #[test]
    fn no_asset_uses_inline_handlers_or_markup_sinks() {
        for asset in ASSETS.iter().filter(|asset| asset.content_type == JS) {
            let text = std::str::from_utf8(asset.body).unwrap_or_default();
            for sink in [
                "innerHTML",
                "outerHTML",
                "insertAdjacentHTML",
                "document.write",
                "eval(",
                "localStorage",
            ] {
                assert!(!text.contains(sink), "{} uses {sink}", asset.name);
            }
        }
        let index = std::str::from_utf8(INDEX_HTML).unwrap_or_default();
        assert!(
            !index.contains("<script>") && !index.contains("<style"),
            "inline script or style"
        );
        for attribute in index.split_whitespace() {
            let inline_handler = attribute.starts_with("on") && attribute.contains('=');
            assert!(
                !inline_handler && !attribute.starts_with("style="),
                "inline attribute {attribute}"
            );
        }
    }
}
