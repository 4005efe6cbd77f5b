//! The store that injects what a [`Faults`] handle sets, and the errors
//! it answers with.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use bytes::Bytes;
use futures::stream::BoxStream;
use futures::FutureExt;
use object_store::path::Path;
use object_store::{
    CopyOptions, GetOptions, GetResult, ListResult, MultipartUpload, ObjectMeta, ObjectStore,
    PutMultipartOptions, PutOptions, PutPayload, PutResult, RenameOptions, Result, UploadPart,
};

use super::{Faults, Op};

/// An injected HTTP error status.
#[derive(Debug)]
struct InjectedStatus {
    op: Op,
    code: u16,
}

impl fmt::Display for InjectedStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let reason = match self.code {
            500 => " Internal Server Error",
            502 => " Bad Gateway",
            503 => " Service Unavailable",
            504 => " Gateway Timeout",
            _ => "",
        };
        write!(
            f,
            "injected fault: server returned non-2xx status code: {}{reason} ({:?})",
            self.code, self.op
        )
    }
}

impl std::error::Error for InjectedStatus {}

pub(super) fn status_error(op: Op, code: u16) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: Box::new(InjectedStatus { op, code }),
    }
}

pub(super) fn reset_error(op: Op) -> object_store::Error {
    object_store::Error::Generic {
        store: "FaultyStore",
        source: Box::new(std::io::Error::new(
            std::io::ErrorKind::ConnectionReset,
            format!("injected fault: connection reset by peer ({op:?})"),
        )),
    }
}

/// An object store that injects the faults its [`Faults`] handle sets.
#[derive(Debug)]
pub struct FaultyStore {
    inner: Arc<dyn ObjectStore>,
    faults: Faults,
}

impl FaultyStore {
    pub fn new(inner: Arc<dyn ObjectStore>, faults: Faults) -> Self {
        Self { inner, faults }
    }

    /// The handle that controls this store's faults.
    pub fn faults(&self) -> &Faults {
        &self.faults
    }
}

impl fmt::Display for FaultyStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FaultyStore({})", self.inner)
    }
}

/// A multipart upload whose parts and completion get `PutMultipart` faults.
#[derive(Debug)]
struct FaultyUpload {
    inner: Box<dyn MultipartUpload>,
    faults: Faults,
}

#[async_trait::async_trait]
impl MultipartUpload for FaultyUpload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let part = self.inner.put_part(data);
        let faults = self.faults.clone();
        async move { faults.run(Op::PutMultipart, part).await }.boxed()
    }

    async fn complete(&mut self) -> Result<PutResult> {
        let faults = self.faults.clone();
        faults.run(Op::PutMultipart, self.inner.complete()).await
    }

    async fn abort(&mut self) -> Result<()> {
        self.inner.abort().await
    }
}

#[async_trait::async_trait]
impl ObjectStore for FaultyStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: PutOptions,
    ) -> Result<PutResult> {
        self.faults
            .run(Op::Put, self.inner.put_opts(location, payload, opts))
            .await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> Result<Box<dyn MultipartUpload>> {
        let inner = self
            .faults
            .run(
                Op::PutMultipart,
                self.inner.put_multipart_opts(location, opts),
            )
            .await?;
        Ok(Box::new(FaultyUpload {
            inner,
            faults: self.faults.clone(),
        }))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> Result<GetResult> {
        let op = if options.head { Op::Head } else { Op::Get };
        self.faults
            .run(op, self.inner.get_opts(location, options))
            .await
    }

    async fn get_ranges(&self, location: &Path, ranges: &[Range<u64>]) -> Result<Vec<Bytes>> {
        self.faults
            .run(Op::Get, self.inner.get_ranges(location, ranges))
            .await
    }

    fn delete_stream(
        &self,
        locations: BoxStream<'static, Result<Path>>,
    ) -> BoxStream<'static, Result<Path>> {
        self.faults
            .stream(Op::Delete, self.inner.delete_stream(locations))
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, Result<ObjectMeta>> {
        self.faults.stream(Op::List, self.inner.list(prefix))
    }

    fn list_with_offset(
        &self,
        prefix: Option<&Path>,
        offset: &Path,
    ) -> BoxStream<'static, Result<ObjectMeta>> {
        self.faults
            .stream(Op::List, self.inner.list_with_offset(prefix, offset))
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> Result<ListResult> {
        self.faults
            .run(Op::List, self.inner.list_with_delimiter(prefix))
            .await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: CopyOptions) -> Result<()> {
        self.faults
            .run(Op::Copy, self.inner.copy_opts(from, to, options))
            .await
    }

    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> Result<()> {
        self.faults
            .run(Op::Copy, self.inner.rename_opts(from, to, options))
            .await
    }
}
