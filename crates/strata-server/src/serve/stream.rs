//! A connection's byte stream as hyper reads it: request heads through the
//! [`Scanner`], bodies straight into hyper's buffer.

use std::io;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::heads::Scanner;

/// `inner` with its request heads rewritten where hyper would refuse them.
pub struct HeadRewriting<S> {
    inner: S,
    scanner: Scanner,
    /// Scanned bytes hyper has not read yet, from `out_at` on.
    out: Vec<u8>,
    out_at: usize,
    eof: bool,
}

impl<S> HeadRewriting<S> {
    pub fn new(inner: S) -> Self {
        Self {
            inner,
            scanner: Scanner::default(),
            out: Vec::new(),
            out_at: 0,
            eof: false,
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for HeadRewriting<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        loop {
            if let Some(pending) = this.out.get(this.out_at..).filter(|p| !p.is_empty()) {
                let n = pending.len().min(buf.remaining());
                buf.put_slice(pending.get(..n).unwrap_or_default());
                this.out_at += n;
                if this.out_at == this.out.len() {
                    this.out.clear();
                    this.out_at = 0;
                }
                return Poll::Ready(Ok(()));
            }
            if this.eof {
                return Poll::Ready(Ok(()));
            }
            let start = buf.filled().len();
            ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
            let read = buf.filled().get(start..).unwrap_or_default();
            if read.is_empty() {
                this.eof = true;
                this.out = this.scanner.finish();
                continue;
            }
            // Body bytes and heads that need no rewriting stay where they
            // were read; from the first other head byte on, they go
            // through the scanner.
            let passed = this.scanner.pass_in_place(read);
            if passed == read.len() {
                return Poll::Ready(Ok(()));
            }
            let rest = read.get(passed..).unwrap_or_default().to_vec();
            buf.set_filled(start + passed);
            this.scanner.feed(&rest, &mut this.out);
            if passed > 0 {
                return Poll::Ready(Ok(()));
            }
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for HeadRewriting<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Reads `data` in pieces of `piece` bytes, then ends.
    struct Pieces {
        data: Vec<u8>,
        at: usize,
        piece: usize,
    }

    impl AsyncRead for Pieces {
        fn poll_read(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
            buf: &mut ReadBuf<'_>,
        ) -> Poll<io::Result<()>> {
            let end = (self.at + self.piece)
                .min(self.data.len())
                .min(self.at + buf.remaining());
            buf.put_slice(&self.data[self.at..end]);
            self.at = end;
            Poll::Ready(Ok(()))
        }
    }

    #[tokio::test]
    async fn reads_what_the_scanner_hands_on() {
        use tokio::io::AsyncReadExt;
        let mut input = b"POST /w HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello".to_vec();
        input.extend(format!("GET /q?query={} HTTP/1.1\r\n\r\n", "y".repeat(70_000)).bytes());
        input.extend_from_slice(b"GET /next HTTP/1.1\r\n\r\n");
        let mut want = Vec::new();
        let mut scanner = Scanner::default();
        scanner.feed(&input, &mut want);
        for (piece, buf_len) in [(1, 7), (13, 5), (4096, 3), (100_000, 8192), (3, 100_000)] {
            let mut stream = HeadRewriting::new(Pieces {
                data: input.clone(),
                at: 0,
                piece,
            });
            let mut got = Vec::new();
            let mut buf = vec![0; buf_len];
            loop {
                let n = stream.read(&mut buf).await.unwrap();
                if n == 0 {
                    break;
                }
                got.extend_from_slice(&buf[..n]);
            }
            assert_eq!(got, want, "pieces of {piece}, reads of {buf_len}");
        }
        assert_ne!(want, input);
    }
}
