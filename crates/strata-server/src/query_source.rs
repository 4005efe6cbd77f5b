//! Storage seen through the query engine's read trait.

use std::sync::Arc;

use strata_codec::{Label, Matcher};
use strata_promql::{Queryable, Series, SourceError};
use strata_storage::{Storage, StorageError};

use crate::state::AppState;

pub struct StorageSource {
    state: Arc<AppState>,
}

impl StorageSource {
    pub fn new(state: Arc<AppState>) -> Self {
        Self { state }
    }

    fn storage(&self) -> Result<&Storage, SourceError> {
        self.state
            .storage()
            .map(|s| s.as_ref())
            .ok_or_else(|| SourceError::Unavailable("recovery is in progress".into()))
    }
}

fn source_error(e: StorageError) -> SourceError {
    match e {
        StorageError::Unavailable(_) | StorageError::Closed | StorageError::Fenced(_) => {
            SourceError::Unavailable(e.to_string())
        }
        StorageError::Corrupt(_) | StorageError::Invalid(_) | StorageError::ReadOnly => {
            SourceError::Internal(e.to_string())
        }
    }
}

#[async_trait::async_trait]
impl Queryable for StorageSource {
    async fn select(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Series>, SourceError> {
        Ok(self
            .storage()?
            .select(matchers, mint, maxt)
            .await
            .map_err(source_error)?
            .into_iter()
            .map(|s| Series {
                labels: s.labels,
                timestamps: s.timestamps,
                values: s.values,
            })
            .collect())
    }

    async fn series(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<Vec<Label>>, SourceError> {
        self.storage()?
            .series(matchers, mint, maxt)
            .await
            .map_err(source_error)
    }

    async fn label_names(
        &self,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        self.storage()?
            .label_names(matchers, mint, maxt)
            .await
            .map_err(source_error)
    }

    async fn label_values(
        &self,
        name: &str,
        matchers: &[Matcher],
        mint: i64,
        maxt: i64,
    ) -> Result<Vec<String>, SourceError> {
        self.storage()?
            .label_values(name, matchers, mint, maxt)
            .await
            .map_err(source_error)
    }
}
