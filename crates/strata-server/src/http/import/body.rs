//! The request body, forwarded chunk by chunk from the connection to the
//! parser's blocking thread.

use std::io::Read;

use axum::body::{Body, Bytes};
use futures::StreamExt;
use tokio::sync::mpsc;

/// Forwards the body's chunks to the parser until it ends, fails or the
/// parser stops taking them.
pub(super) async fn pump(body: Body, tx: mpsc::Sender<Result<Bytes, String>>) {
    let mut stream = body.into_data_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| e.to_string());
        let failed = chunk.is_err();
        if tx.send(chunk).await.is_err() || failed {
            return;
        }
    }
}

/// The body as a blocking reader over the chunks [`pump`] forwards.
pub(super) struct BodyReader {
    rx: mpsc::Receiver<Result<Bytes, String>>,
    chunk: Bytes,
}

impl BodyReader {
    pub(super) fn new(rx: mpsc::Receiver<Result<Bytes, String>>) -> Self {
        Self {
            rx,
            chunk: Bytes::new(),
        }
    }
}

impl Read for BodyReader {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        while self.chunk.is_empty() {
            match self.rx.blocking_recv() {
                Some(Ok(b)) => self.chunk = b,
                Some(Err(e)) => return Err(std::io::Error::other(e)),
                None => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len());
        let head = self.chunk.split_to(n);
        if let Some(dst) = out.get_mut(..n) {
            dst.copy_from_slice(&head);
        }
        Ok(n)
    }
}
