//! The endpoint's thread: it accepts one connection at a time and answers it (`http`),
//! checking the stop flag between connections.

use super::http::answer;
use super::source::MetricsSource;
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// How long a client has to send its whole request head.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// How long one write of the answer may block.
pub const WRITE_TIMEOUT: Duration = Duration::from_secs(5);
/// How often the idle server looks at the stop flag.
pub(super) const STOP_CHECK: Duration = Duration::from_millis(100);

/// The metrics endpoint's socket, bound before the dataplane starts (so a port in use stops
/// the daemon before it touches an interface).
pub struct MetricsListener {
    listener: TcpListener,
}

impl MetricsListener {
    pub fn bind(addr: SocketAddr) -> Result<MetricsListener, String> {
        let listener = TcpListener::bind(addr)
            .map_err(|e| format!("cannot listen for metrics on {addr}: {e}"))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| format!("metrics socket: {e}"))?;
        Ok(MetricsListener { listener })
    }

    pub fn local_addr(&self) -> std::io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    /// Serve scrapes of `source` on a thread of its own until the server is stopped.
    pub fn serve(self, source: MetricsSource) -> Result<MetricsServer, String> {
        self.serve_with(move || super::encode(source.snapshot()))
    }

    /// The same with the exposition made by `metrics`.
    fn serve_with(
        self,
        metrics: impl Fn() -> String + Send + 'static,
    ) -> Result<MetricsServer, String> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let handle = std::thread::Builder::new()
            .name("sluice_metrics".into())
            .spawn(move || self.run(&metrics, &flag))
            .map_err(|e| format!("cannot start the metrics thread: {e}"))?;
        Ok(MetricsServer {
            stop,
            handle: Some(handle),
        })
    }

    fn run(&self, metrics: &dyn Fn() -> String, stop: &AtomicBool) {
        while !stop.load(Ordering::Relaxed) {
            match self.listener.accept() {
                Ok((stream, _)) => {
                    // A client that goes away or stalls costs only its own answer.
                    let _ = answer(stream, metrics, stop);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    std::thread::sleep(STOP_CHECK);
                }
                Err(e) => {
                    eprintln!("sluice: metrics accept: {e}");
                    std::thread::sleep(STOP_CHECK);
                }
            }
        }
    }
}

/// The running metrics thread; stopped (and joined) by `stop` or when dropped.
pub struct MetricsServer {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<()>>,
}

impl MetricsServer {
    pub fn stop(mut self) {
        self.halt();
    }

    fn halt(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl Drop for MetricsServer {
    fn drop(&mut self) {
        self.halt();
    }
}

#[cfg(test)]
mod tests {
    use super::super::http::MAX_HEAD;
    use super::*;
    use std::io::{Read, Write};
    use std::net::TcpStream;
    use std::time::Instant;

    /// A server on an ephemeral loopback port serving a fixed exposition.
    fn serve_fixed() -> (SocketAddr, MetricsServer) {
        let l = MetricsListener::bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        (addr, l.serve_with(|| "m 1\n".to_string()).unwrap())
    }

    fn exchange(addr: SocketAddr, request: &[u8]) -> String {
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(request).unwrap();
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        out
    }

    #[test]
    fn a_stalled_client_does_not_keep_the_next_one_waiting_forever() {
        let (addr, server) = serve_fixed();
        // Connects and sends half a request line, then nothing.
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled.write_all(b"GET /met").unwrap();
        let t0 = Instant::now();
        let out = exchange(addr, b"GET /metrics HTTP/1.1\r\n\r\n");
        assert!(
            out.starts_with("HTTP/1.1 200 OK\r\n") && out.ends_with("m 1\n"),
            "{out}"
        );
        assert!(t0.elapsed() < HEAD_TIMEOUT + Duration::from_secs(3));
        let out = exchange(
            addr,
            b"PUT /metrics HTTP/1.1\r\nContent-Length: 3\r\n\r\nabc",
        );
        assert!(out.starts_with("HTTP/1.1 405 "), "{out}");
        let long = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(MAX_HEAD)
        );
        let out = exchange(addr, long.as_bytes());
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        drop(stalled);
        let t0 = Instant::now();
        server.stop();
        assert!(t0.elapsed() < Duration::from_secs(2));
    }

    #[test]
    fn the_server_stops_while_a_client_stalls() {
        let (addr, server) = serve_fixed();
        let mut stalled = TcpStream::connect(addr).unwrap();
        stalled.write_all(b"GET /metrics HTTP/1.1\r\n").unwrap();
        // Let the server take the connection and wait on it.
        std::thread::sleep(Duration::from_millis(300));
        let t0 = Instant::now();
        server.stop();
        assert!(t0.elapsed() < Duration::from_secs(1), "{:?}", t0.elapsed());
        stalled
            .set_read_timeout(Some(Duration::from_secs(5)))
            .unwrap();
        let mut out = String::new();
        let _ = stalled.read_to_string(&mut out);
        assert_eq!(out, "", "no answer to an unfinished request");
    }
}
