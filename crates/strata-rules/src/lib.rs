//! Recording and alerting rules, as Prometheus runs them.
//!
//! ```text
//!  rule files ─▶ file (parse, check) ─▶ group ─▶ evaluation at one timestamp
//!                                         │        ├─ recording: samples ─▶ sink
//!                                         │        └─ alerting: states ─▶ ALERTS, ALERTS_FOR_STATE ─▶ sink
//!                                         │                      └─▶ notifier ─▶ Alertmanager
//!                                         └─ template: labels and annotations
//! ```

pub mod alerting;
pub mod api;
pub mod file;
pub mod group;
pub mod manager;
pub mod notifier;
pub mod relabel;
pub mod template;
