//! The phone page's HTTP side (axum): pairing, the device credential on every request,
//! the 429 for an address that keeps failing, the page, the answers (anti-forgery token
//! checked, then the one answer path) and the long poll that tells the page's script the
//! waiting set changed. No token, cookie or secret is ever logged.

use std::net::IpAddr;
use std::time::Duration;

use axum::extract::{Form, Query};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Router};
use serde::Deserialize;
use tokio::sync::broadcast::error::RecvError;

use super::page::{self, Item, Notice};
use crate::activity::now_ms;
use crate::app_settings::WebSensitive;
use crate::decision::answer::{AnswerRequest, ChoiceKey, RuleError};
use crate::decision::broker::{Answerer, BrokerError, PromptId};
use crate::decision::grants::Lifetime;
use crate::serving::service::Service;
use crate::serving::web::{DeviceInfo, PairError, Peer};
use crate::surfaces::prompt_view::{build_view, DEFAULT_LIFETIME};

/// The device credential's cookie.
const COOKIE: &str = "landstrip_device";
/// How long the long poll waits for a change before it answers "the same".
const POLL_WAIT: Duration = Duration::from_secs(25);
/// The page's sheet and script, embedded in the binary.
const PAGE_CSS: &str = concat!(
    include_str!("../../../../../ui/shared/tokens.css"),
    include_str!("../../../../../ui/web/page.css")
);
const PAGE_JS: &str = include_str!("../../../../../ui/web/page.js");
/// Every response's policy: nothing but this origin's own files, no inline script, no
/// framing, no referrer (a pairing URL holds a token).
const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; \
connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'";

/// The router, every route behind the device credential but the pairing URL and the
/// static assets.
pub fn router(service: Service) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/pair", get(pair))
        .route("/answer", post(answer))
        .route("/changes", get(changes))
        .route(
            "/page.css",
            get(|| async { asset("text/css; charset=utf-8", PAGE_CSS) }),
        )
        .route(
            "/page.js",
            get(|| async { asset("text/javascript; charset=utf-8", PAGE_JS) }),
        )
        .fallback(not_found)
        .layer(axum::middleware::map_response(secure_headers))
        .layer(Extension(service))
}

async fn secure_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    headers
        .entry(header::CACHE_CONTROL)
        .or_insert(HeaderValue::from_static("no-store"));
    response
}

fn asset(kind: &'static str, body: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, kind),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

fn html(status: StatusCode, body: String) -> Response {
    (
        status,
        [(header::CONTENT_TYPE, "text/html; charset=utf-8")],
        body,
    )
        .into_response()
}

async fn not_found() -> Response {
    html(
        StatusCode::NOT_FOUND,
        page::refusal("Not found", "There is nothing here."),
    )
}

/// Runs `work` on the device store off the runtime (it may write its file).
async fn with_devices<T: Send + 'static>(
    service: &Service,
    work: impl FnOnce(&mut crate::serving::web::Devices) -> T + Send + 'static,
) -> Option<T> {
    let service = service.clone();
    tokio::task::spawn_blocking(move || {
        let mut devices = service.web().devices().ok()?;
        Some(work(&mut devices))
    })
    .await
    .ok()
    .flatten()
}

fn too_many() -> Response {
    html(
        StatusCode::TOO_MANY_REQUESTS,
        page::refusal(
            "Too many attempts",
            "Too many failed attempts from this address; wait a minute.",
        ),
    )
}

fn unauthorized() -> Response {
    html(
        StatusCode::UNAUTHORIZED,
        page::refusal(
            "Not paired",
            "This browser is not paired. Run `landstrip-tray ctl web pair` at the desktop and open the URL it prints.",
        ),
    )
}

/// The device behind a request's cookie, or the refusal to send (429 or 401; a wrong
/// credential counts as a failure of its address).
async fn device(
    service: &Service,
    headers: &HeaderMap,
    peer: IpAddr,
) -> Result<DeviceInfo, Response> {
    let secret = cookie(headers);
    let now = now_ms();
    let found = with_devices(service, move |devices| {
        if devices.limited(peer, now) {
            return Err(true);
        }
        let found = secret.as_deref().and_then(|s| devices.check(s, now));
        match found {
            Some(device) => Ok(device),
            None => {
                devices.fail(peer, now);
                Err(false)
            }
        }
    })
    .await;
    match found {
        Some(Ok(device)) => Ok(device),
        Some(Err(true)) => Err(too_many()),
        _ => Err(unauthorized()),
    }
}

fn cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.to_owned())
}

#[derive(Deserialize)]
struct PairQuery {
    #[serde(default)]
    token: String,
}

async fn pair(
    Extension(service): Extension<Service>,
    Extension(Peer(peer)): Extension<Peer>,
    headers: HeaderMap,
    Query(query): Query<PairQuery>,
) -> Response {
    let agent = headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let now = now_ms();
    let ip = peer.ip();
    let paired = with_devices(&service, move |devices| {
        if devices.limited(ip, now) {
            return Err(None);
        }
        match devices.pair(&query.token, &agent, now) {
            Ok(Ok(paired)) => Ok(paired),
            Ok(Err(why)) => {
                devices.fail(ip, now);
                Err(Some(why))
            }
            Err(e) => {
                tracing::error!("phone page: {e}");
                Err(Some(PairError::Unknown))
            }
        }
    })
    .await;
    match paired {
        Some(Ok((device, secret))) => {
            tracing::info!("phone page: paired device {} ({})", device.id, device.name);
            let cookie = format!(
                "{COOKIE}={secret}; HttpOnly; Secure; SameSite=Strict; Path=/; Max-Age=31536000"
            );
            let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, "/")]).into_response();
            if let Ok(value) = HeaderValue::from_str(&cookie) {
                response.headers_mut().insert(header::SET_COOKIE, value);
            }
            response
        }
        Some(Err(None)) => too_many(),
        Some(Err(Some(PairError::Gone))) => html(
            StatusCode::GONE,
            page::refusal(
                "Pairing link used",
                "This pairing link was used already or has expired. Run `landstrip-tray ctl web pair` for a new one.",
            ),
        ),
        _ => unauthorized(),
    }
}

#[derive(Deserialize)]
struct IndexQuery {
    #[serde(default)]
    done: Option<String>,
}

async fn index(
    Extension(service): Extension<Service>,
    Extension(Peer(peer)): Extension<Peer>,
    headers: HeaderMap,
    Query(query): Query<IndexQuery>,
) -> Response {
    let device = match device(&service, &headers, peer.ip()).await {
        Ok(device) => device,
        Err(refused) => return refused,
    };
    let notice = match query.done.as_deref() {
        Some("allow") => Notice::Done("Allowed."),
        Some("deny") => Notice::Done("Denied."),
        _ => Notice::None,
    };
    render(&service, &device, notice, StatusCode::OK).await
}

/// Whether the person lets the phone allow a sensitive or after-a-secret request.
async fn marked_allowed(service: &Service) -> bool {
    let Some(file) = service.settings_file().cloned() else {
        return false;
    };
    tokio::task::spawn_blocking(move || file.load().ok())
        .await
        .ok()
        .flatten()
        .is_some_and(|s| s.web_sensitive == WebSensitive::Allow)
}

/// The waiting requests as the page shows them, and the version naming the set.
async fn items(service: &Service) -> (Vec<Item>, String) {
    let allowed = marked_allowed(service).await;
    let broker = service.broker();
    let pending = broker.pending();
    let total = pending.len();
    let items = pending
        .iter()
        .enumerate()
        .map(|(i, prompt)| {
            let covered = broker.covered_by_session_answer(prompt.id).len();
            let view = build_view(prompt, service.home(), i + 1, total, covered);
            let marked = view.sensitive.is_some() || view.after_secret.is_some();
            // Another machine's request: whether it is sensitive depends on that user's
            // home, which only the remote knows, so the phone may only deny it.
            let remote = prompt.host.is_some();
            Item {
                view,
                may_allow: !remote && (allowed || !marked),
                marked,
            }
        })
        .collect();
    (items, version(service))
}

/// The waiting set's name: its ids, in order.
fn version(service: &Service) -> String {
    let ids: Vec<String> = service
        .broker()
        .pending()
        .iter()
        .map(|p| p.id.to_string())
        .collect();
    format!("v{}", ids.join("-"))
}

async fn render(
    service: &Service,
    device: &DeviceInfo,
    notice: Notice,
    status: StatusCode,
) -> Response {
    let (items, version) = items(service).await;
    let token = service.web().form_token(device.id);
    html(
        status,
        page::page(&items, &device.name, &token, &version, &notice),
    )
}

#[derive(Deserialize)]
struct AnswerForm {
    #[serde(default)]
    id: Option<PromptId>,
    #[serde(default)]
    choice: String,
    #[serde(default)]
    token: String,
    #[serde(default)]
    confirmed: Option<String>,
}

async fn answer(
    Extension(service): Extension<Service>,
    Extension(Peer(peer)): Extension<Peer>,
    headers: HeaderMap,
    Form(form): Form<AnswerForm>,
) -> Response {
    let device = match device(&service, &headers, peer.ip()).await {
        Ok(device) => device,
        Err(refused) => return refused,
    };
    // The anti-forgery token: a page this device loaded in this run of the app.
    if !service.web().check_form_token(device.id, &form.token) {
        return html(
            StatusCode::FORBIDDEN,
            page::refusal(
                "Refused",
                "This answer did not come from the page (its form token is missing or wrong); nothing was answered.",
            ),
        );
    }
    let (Some(id), Some(choice)) = (form.id, choice_of(&form.choice)) else {
        return render(
            &service,
            &device,
            Notice::Problem("That answer is not one the page offers.".to_owned()),
            StatusCode::BAD_REQUEST,
        )
        .await;
    };
    let confirmed = form.confirmed.as_deref() == Some("yes");
    let allowed = marked_allowed(&service).await;
    // A marked request allowed from the phone takes a second tap.
    if choice != ChoiceKey::Deny && allowed && !confirmed {
        let (items, _) = items(&service).await;
        if let Some(item) = items.into_iter().find(|i| i.view.id == id && i.marked) {
            let token = service.web().form_token(device.id);
            return html(StatusCode::OK, page::confirm(&item, choice, &token));
        }
    }
    let mut request = AnswerRequest::new(choice);
    if choice == ChoiceKey::Session {
        request.lifetime = Lifetime::parse(DEFAULT_LIFETIME);
    }
    // Only the confirmation step sends these; the broker refuses them from the phone
    // anyway unless the setting allows it.
    request.confirmed = confirmed && allowed;
    request.confirmed_after_secret = confirmed && allowed;
    let by = Answerer::Web {
        device: device.name.clone(),
        marked_allowed: allowed,
    };
    let broker = service.broker().clone();
    let result = tokio::task::spawn_blocking(move || broker.answer_by(id, &request, &by)).await;
    match result {
        Ok(Ok(answered)) => {
            let done = match answered.action {
                crate::wire::protocol::Action::Allow => "allow",
                crate::wire::protocol::Action::Deny => "deny",
            };
            (
                StatusCode::SEE_OTHER,
                [(header::LOCATION, format!("/?done={done}"))],
            )
                .into_response()
        }
        Ok(Err(e)) => {
            let status = match e {
                BrokerError::AtTheDesktop(_) => StatusCode::FORBIDDEN,
                BrokerError::NotPending(_) | BrokerError::Busy(_) => StatusCode::CONFLICT,
                BrokerError::Rules(_) => StatusCode::UNPROCESSABLE_ENTITY,
                BrokerError::Policy(_) => StatusCode::INTERNAL_SERVER_ERROR,
                // A remote machine's request (the merge of i27-ssh and i27-web): refused
                // there, or the answer did not reach it.
                BrokerError::RemoteRefused(_) => StatusCode::UNPROCESSABLE_ENTITY,
                BrokerError::NotDelivered(_) => StatusCode::BAD_GATEWAY,
            };
            // The rules' words name `ctl`'s flag, which means nothing on a phone.
            let words = match &e {
                BrokerError::Rules(RuleError::NeedsConfirmation { what }) => {
                    format!("{what}: allowing it for longer is confirmed at the desktop")
                }
                _ => e.to_string(),
            };
            render(&service, &device, Notice::Problem(words), status).await
        }
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR.into_response(),
    }
}

fn choice_of(word: &str) -> Option<ChoiceKey> {
    match word {
        "once" => Some(ChoiceKey::Once),
        "session" => Some(ChoiceKey::Session),
        "deny" => Some(ChoiceKey::Deny),
        _ => None,
    }
}

#[derive(Deserialize)]
struct ChangesQuery {
    #[serde(default)]
    since: String,
}

/// The long poll: answers with the waiting set's version as soon as it differs from
/// `since`, or after [`POLL_WAIT`] with it unchanged.
async fn changes(
    Extension(service): Extension<Service>,
    Extension(Peer(peer)): Extension<Peer>,
    headers: HeaderMap,
    Query(query): Query<ChangesQuery>,
) -> Response {
    if let Err(refused) = device(&service, &headers, peer.ip()).await {
        return refused;
    }
    // Subscribed before looking, so a change in between is not missed.
    let mut events = service.broker().subscribe();
    let deadline = tokio::time::Instant::now() + POLL_WAIT;
    loop {
        let now = version(&service);
        if now != query.since {
            return (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], now).into_response();
        }
        match tokio::time::timeout_at(deadline, events.recv()).await {
            Ok(Ok(_)) | Ok(Err(RecvError::Lagged(_))) => {}
            Ok(Err(RecvError::Closed)) | Err(_) => {
                return (StatusCode::OK, [(header::CONTENT_TYPE, "text/plain")], now)
                    .into_response();
            }
        }
    }
}
