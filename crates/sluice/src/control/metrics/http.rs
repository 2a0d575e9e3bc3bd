//! The little HTTP the endpoint speaks: one request head read within `HEAD_TIMEOUT`, routed
//! (`GET` or `HEAD /metrics`, else an error status), answered, and the connection closed.

use super::server::{HEAD_TIMEOUT, STOP_CHECK, WRITE_TIMEOUT};
use prometheus_client::encoding::prometheus_text;
use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The longest request head read; a longer one is answered 431.
pub(super) const MAX_HEAD: usize = 8192;

/// An HTTP answer: status line, content type, body.
#[derive(Debug, PartialEq, Eq)]
struct Answer {
    status: u16,
    reason: &'static str,
    content_type: &'static str,
    /// Extra header lines, each ending in CRLF.
    headers: &'static str,
    body: String,
    /// HEAD: the headers of the GET answer without its body.
    head_only: bool,
}

impl Answer {
    fn text(status: u16, reason: &'static str, body: &str) -> Answer {
        Answer {
            status,
            reason,
            content_type: "text/plain; charset=utf-8",
            headers: "",
            body: format!("{body}\n"),
            head_only: false,
        }
    }

    fn bytes(&self) -> Vec<u8> {
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{}Connection: close\r\n\r\n",
            self.status,
            self.reason,
            self.content_type,
            self.body.len(),
            self.headers
        )
        .into_bytes();
        if !self.head_only {
            out.extend_from_slice(self.body.as_bytes());
        }
        out
    }
}

/// The answer to a request head (everything up to the blank line); `metrics` makes the
/// exposition, only when it is asked for.
fn route(head: &[u8], metrics: impl FnOnce() -> String) -> Answer {
    let Ok(head) = std::str::from_utf8(head) else {
        return Answer::text(400, "Bad Request", "bad request");
    };
    let line = head.lines().next().unwrap_or("");
    let mut words = line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (words.next(), words.next(), words.next(), words.next())
    else {
        return Answer::text(400, "Bad Request", "bad request line");
    };
    if !version.starts_with("HTTP/1.") {
        return Answer::text(505, "HTTP Version Not Supported", "HTTP/1.x only");
    }
    let path = target.split('?').next().unwrap_or("");
    if path != "/metrics" {
        return Answer::text(404, "Not Found", "not found: try GET /metrics");
    }
    if method != "GET" && method != "HEAD" {
        let mut a = Answer::text(
            405,
            "Method Not Allowed",
            "method not allowed: GET /metrics",
        );
        a.headers = "Allow: GET, HEAD\r\n";
        return a;
    }
    Answer {
        status: 200,
        reason: "OK",
        content_type: prometheus_text::CONTENT_TYPE,
        headers: "",
        body: metrics(),
        head_only: method == "HEAD",
    }
}

/// The request head, up to and without the blank line; `None` when the client closed, sent
/// nothing complete within `HEAD_TIMEOUT`, or `stop` was set meanwhile; `Err(())` when it is
/// longer than `MAX_HEAD`.
fn read_head(stream: &mut TcpStream, stop: &AtomicBool) -> Result<Option<Vec<u8>>, ()> {
    let deadline = Instant::now() + HEAD_TIMEOUT;
    let mut head = Vec::new();
    let mut chunk = [0u8; 1024];
    loop {
        match head_end(&head) {
            Some(end) if end <= MAX_HEAD => {
                head.truncate(end);
                return Ok(Some(head));
            }
            Some(_) => return Err(()),
            None if head.len() > MAX_HEAD => return Err(()),
            None => {}
        }
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stop.load(Ordering::Relaxed) {
            return Ok(None);
        }
        if stream.set_read_timeout(Some(left.min(STOP_CHECK))).is_err() {
            return Ok(None);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return Ok(None),
            Ok(n) => head.extend_from_slice(&chunk[..n]),
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                        | std::io::ErrorKind::Interrupted
                ) => {}
            Err(_) => return Ok(None),
        }
    }
}

/// Where the head ends: the first blank line (CRLF CRLF, or bare LF LF).
fn head_end(buf: &[u8]) -> Option<usize> {
    (0..buf.len()).find(|&i| buf[i..].starts_with(b"\r\n\r\n") || buf[i..].starts_with(b"\n\n"))
}

/// Answer one connection: read the head, write the answer, close.
pub(super) fn answer(
    mut stream: TcpStream,
    metrics: impl FnOnce() -> String,
    stop: &AtomicBool,
) -> std::io::Result<()> {
    stream.set_nonblocking(false)?;
    stream.set_write_timeout(Some(WRITE_TIMEOUT))?;
    let a = match read_head(&mut stream, stop) {
        Ok(Some(head)) => route(&head, metrics),
        Ok(None) => return Ok(()),
        Err(()) => Answer::text(
            431,
            "Request Header Fields Too Large",
            "request head too long",
        ),
    };
    stream.write_all(&a.bytes())?;
    stream.shutdown(Shutdown::Write)?;
    // Read what the client still sends (a body, say) for a moment, so that closing with
    // unread data does not reset the connection before it has read the answer.
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    let mut sink = [0u8; 1024];
    let mut left: usize = 64 * 1024;
    while left > 0 {
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => break,
            Ok(n) => left = left.saturating_sub(n),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route_of(head: &str) -> Answer {
        route(head.as_bytes(), || "m 1\n".to_string())
    }

    #[test]
    fn only_get_metrics_is_served() {
        let a = route_of("GET /metrics HTTP/1.1\r\nHost: x");
        assert_eq!((a.status, a.body.as_str()), (200, "m 1\n"));
        assert!(a.content_type.starts_with("text/plain; version=0.0.4"));
        assert_eq!(route_of("GET /metrics?x=1 HTTP/1.0").status, 200);
        let head = route_of("HEAD /metrics HTTP/1.1");
        assert_eq!(head.status, 200);
        let bytes = String::from_utf8(head.bytes()).unwrap();
        assert!(
            bytes.ends_with("Content-Length: 4\r\nConnection: close\r\n\r\n"),
            "{bytes}"
        );
        assert_eq!(route_of("GET / HTTP/1.1").status, 404);
        assert_eq!(route_of("GET /metricsx HTTP/1.1").status, 404);
        let post = route_of("POST /metrics HTTP/1.1");
        assert_eq!(post.status, 405);
        assert_eq!(post.headers, "Allow: GET, HEAD\r\n");
        assert_eq!(route_of("DELETE /metrics HTTP/1.1").status, 405);
        assert_eq!(route_of("GET /metrics HTTP/2.0").status, 505);
        assert_eq!(route_of("GET /metrics").status, 400);
        assert_eq!(route_of("").status, 400);
        assert_eq!(route(b"GET /\xff HTTP/1.1", String::new).status, 400);
    }

    #[test]
    fn the_answer_is_http_1_1_with_a_length() {
        let a = route_of("GET /metrics HTTP/1.1");
        let text = String::from_utf8(a.bytes()).unwrap();
        assert!(text.starts_with("HTTP/1.1 200 OK\r\n"), "{text}");
        assert!(text.contains("\r\nContent-Length: 4\r\n"), "{text}");
        assert!(text.ends_with("\r\n\r\nm 1\n"), "{text}");
    }

    #[test]
    fn head_ends_at_the_blank_line() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nA: b\r\n\r\nbody"), Some(20));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\n"), Some(14));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n"), None);
    }
}
