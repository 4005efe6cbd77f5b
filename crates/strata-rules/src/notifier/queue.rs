//! The queue between rule evaluation and the sending task: bounded, and
//! when full it drops the oldest alerts for the newest, as Prometheus'
//! notifier does.

use std::collections::VecDeque;

use crate::group::Notification;

pub(crate) struct AlertQueue {
    items: VecDeque<Notification>,
    capacity: usize,
}

impl AlertQueue {
    pub(crate) fn new(capacity: usize) -> Self {
        Self {
            items: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Appends `alerts`, dropping the oldest queued (or, past the capacity
    /// on their own, the first of `alerts`) to make room; returns how many
    /// were dropped.
    pub(crate) fn push(&mut self, alerts: Vec<Notification>) -> usize {
        let over = alerts.len().saturating_sub(self.capacity);
        let full = (self.items.len() + alerts.len() - over).saturating_sub(self.capacity);
        self.items.drain(..full);
        self.items.extend(alerts.into_iter().skip(over));
        over + full
    }

    /// Takes up to `max` of the oldest alerts.
    pub(crate) fn next_batch(&mut self, max: usize) -> Vec<Notification> {
        let n = self.items.len().min(max);
        self.items.drain(..n).collect()
    }

    pub(crate) fn len(&self) -> usize {
        self.items.len()
    }

    pub(crate) fn capacity(&self) -> usize {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerting::LabelSet;

    fn alert(i: i64) -> Notification {
        Notification {
            labels: LabelSet::from([("alertname".to_owned(), format!("a{i}"))]),
            annotations: LabelSet::new(),
            starts_at: i,
            ends_at: 0,
            generator_url: String::new(),
        }
    }

    fn alerts(range: std::ops::Range<i64>) -> Vec<Notification> {
        range.map(alert).collect()
    }

    fn starts(v: &[Notification]) -> Vec<i64> {
        v.iter().map(|a| a.starts_at).collect()
    }

    #[test]
    fn drops_the_oldest_when_full() {
        let mut q = AlertQueue::new(5);
        assert_eq!(q.push(alerts(0..3)), 0);
        assert_eq!(q.push(alerts(3..7)), 2);
        assert_eq!(q.len(), 5);
        assert_eq!(starts(&q.next_batch(100)), vec![2, 3, 4, 5, 6]);
        assert_eq!(q.len(), 0);
    }

    #[test]
    fn a_batch_larger_than_the_queue_keeps_its_newest() {
        let mut q = AlertQueue::new(3);
        q.push(alerts(0..2));
        assert_eq!(q.push(alerts(10..15)), 2 + 2);
        assert_eq!(starts(&q.next_batch(100)), vec![12, 13, 14]);
    }

    #[test]
    fn batches_take_the_oldest_first() {
        let mut q = AlertQueue::new(1000);
        q.push(alerts(0..600));
        let sizes: Vec<usize> = std::iter::from_fn(|| {
            let b = q.next_batch(256);
            (!b.is_empty()).then_some(b.len())
        })
        .collect();
        assert_eq!(sizes, vec![256, 256, 88]);
        q.push(alerts(0..3));
        assert_eq!(starts(&q.next_batch(2)), vec![0, 1]);
        assert_eq!(starts(&q.next_batch(2)), vec![2]);
    }
}
