//! Native outbound: the pool performs a run's `fetch` from its own machine (the worker has no
//! sockets: its jail refuses them). One blocking request per thread, bounded in time by what is
//! left of the run, in redirects, and in response size.

use std::io::Read;
use std::time::Duration;

use codemode_protocol::{limits, FailureCode, WireRequest, WireResponse};
use ureq::http;
use ureq::ResponseExt;

pub(crate) struct NativeClient {
    agent: ureq::Agent,
}

impl NativeClient {
    pub fn new() -> Self {
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .max_redirects(limits::FETCH_REDIRECTS)
            .user_agent("codemode-executor")
            .save_redirect_history(true)
            .build()
            .into();
        NativeClient { agent }
    }

    /// Performs `req`; the error is the text the sandbox's fetch rejects with.
    pub fn fetch(&self, req: WireRequest, timeout: Duration) -> Result<WireResponse, String> {
        let url = req.url.clone();
        let failed =
            |detail: String| FailureCode::FetchFailed.render(&[("url", &url), ("detail", &detail)]);
        let method = http::Method::from_bytes(req.method.as_bytes())
            .map_err(|_| failed(format!("\"{}\" is not an HTTP method", req.method)))?;
        let mut builder = http::Request::builder()
            .method(method)
            .uri(req.url.as_str());
        for (k, v) in &req.headers {
            builder = builder.header(k.as_str(), v.as_str());
        }
        let request = builder
            .body(req.body.unwrap_or_default())
            .map_err(|e| failed(e.to_string()))?;
        let request = self
            .agent
            .configure_request(request)
            .timeout_global(Some(timeout))
            .allow_non_standard_methods(true)
            .build();
        let response = self.agent.run(request).map_err(|e| failed(describe(&e)))?;
        let final_url = response.get_uri().to_string();
        let redirected = response.get_redirect_history().is_some_and(|h| h.len() > 1);
        let status = response.status();
        let headers = response
            .headers()
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect();
        let limit = limits::FETCH_BODY_BYTES as u64;
        let mut body = Vec::new();
        response
            .into_body()
            .into_reader()
            .take(limit + 1)
            .read_to_end(&mut body)
            .map_err(|e| failed(e.to_string()))?;
        if body.len() as u64 > limit {
            let limit = limit.to_string();
            return Err(FailureCode::FetchTooLarge.render(&[
                ("what", "response"),
                ("url", &url),
                ("limit", &limit),
            ]));
        }
        Ok(WireResponse {
            status: status.as_u16(),
            status_text: status.canonical_reason().unwrap_or("").to_string(),
            headers,
            body: Some(body),
            url: final_url,
            redirected,
        })
    }
}

fn describe(e: &ureq::Error) -> String {
    match e {
        ureq::Error::Timeout(_) => {
            "the request timed out (the run's time bound was reached)".into()
        }
        ureq::Error::TooManyRedirects => format!("more than {} redirects", limits::FETCH_REDIRECTS),
        ureq::Error::HostNotFound => "the host name could not be resolved".into(),
        ureq::Error::ConnectionFailed => "the connection was refused or could not be made".into(),
        other => other.to_string(),
    }
}
