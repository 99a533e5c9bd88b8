//! A flow's [`Stats`] as Prometheus text: MM2's metric names and Strait's own.

use std::collections::BTreeMap;

use super::{FlowState, Stats};
use crate::internal_topics::now_ms;
use crate::metrics::PrometheusText;

impl Stats {
    /// Appends this flow's metrics in Prometheus text format.
    ///
    /// MM2's JMX metrics keep their names, Prometheus style: the MBean
    /// `kafka.connect.mirror:type=MirrorSourceConnector` attribute `record-count` becomes
    /// `kafka_connect_mirror_source_connector_record_count_total`, with the MBean's tags as labels.
    pub fn write_prometheus(&self, out: &mut PrometheusText) {
        let now = now_ms();
        let (source, target) = (self.source.as_str(), self.target.as_str());
        let (state, _) = self.state();
        out.gauge(
            "strait_flow_up",
            "1 while the flow is running, 0 while it is starting, stopped or failed.",
            &[("source", source), ("target", target)],
            f64::from(u8::from(state == FlowState::Running)),
        );
        let flow = [("source", source), ("target", target)];
        let transactions = self.transactions();
        for (outcome, count) in [
            ("committed", &transactions.committed),
            ("aborted", &transactions.aborted),
        ] {
            out.counter(
                "strait_transactions_total",
                "Exactly-once mode: transactions the target's coordinator committed or aborted (EndTxn).",
                &[("source", source), ("target", target), ("outcome", outcome)],
                count.load(std::sync::atomic::Ordering::Relaxed) as f64,
            );
        }
        if let Some(ms) = self.last_heartbeat_ms() {
            out.gauge(
                "strait_heartbeat_last_timestamp_seconds",
                "When the target took the flow's last heartbeat (emit.heartbeats.interval.seconds), in seconds since the epoch.",
                &flow,
                ms as f64 / 1000.0,
            );
        }
        for (task, failing) in self.tasks.lock().expect("stats lock").iter() {
            out.gauge(
                "strait_task_up",
                "1 while the flow's periodic task (heartbeats, checkpoints, ...) runs, 0 while it fails and retries.",
                &[("source", source), ("target", target), ("task", task)],
                f64::from(u8::from(failing.is_none())),
            );
        }
        let workers = self.workers.lock().expect("stats lock");
        for kind in super::WORKER_KINDS {
            out.counter(
                "strait_worker_restarts_total",
                "Restarts of the data path's fetcher or producer tasks after one panicked or ended: its partitions resumed after a backoff.",
                &[("source", source), ("target", target), ("worker", kind)],
                workers.restarts.get(kind).copied().unwrap_or(0) as f64,
            );
        }
        out.gauge(
            "strait_workers_restarting",
            "Fetcher or producer tasks that ended and wait for their restart: their partitions are not mirrored meanwhile.",
            &flow,
            workers.down.len() as f64,
        );
        drop(workers);
        self.write_waiting_topics(out);
        const SOURCE: &str = "kafka_connect_mirror_source_connector";
        let partitions = self.partitions.lock().expect("stats lock");
        for ((topic, partition), handle) in partitions.iter() {
            let p = handle.inner.lock().expect("stats lock");
            let lag = p.lag(topic, &handle.remote_topic, *partition, now);
            let partition = partition.to_string();
            let labels = [
                ("source", source),
                ("target", target),
                ("topic", handle.remote_topic.as_str()),
                ("partition", partition.as_str()),
            ];
            out.counter(
                &format!("{SOURCE}_record_count_total"),
                "Records acknowledged by the target (MM2 record-count).",
                &labels,
                p.record_count as f64,
            );
            out.gauge(
                &format!("{SOURCE}_record_rate"),
                "Records acknowledged per second over the last minute (MM2 record-rate).",
                &labels,
                p.records.rate(now),
            );
            out.counter(
                &format!("{SOURCE}_byte_count_total"),
                "Record batch bytes acknowledged by the target (MM2 byte-count counts record values only).",
                &labels,
                p.byte_count as f64,
            );
            out.gauge(
                &format!("{SOURCE}_byte_rate"),
                "Record batch bytes acknowledged per second over the last minute (MM2 byte-rate).",
                &labels,
                p.bytes.rate(now),
            );
            out.window(
                &format!("{SOURCE}_record_age_ms"),
                "Age of the newest record of each fetched batch when fetched (MM2 record-age-ms).",
                &labels,
                &p.record_age_ms,
                now,
            );
            out.window(
                &format!("{SOURCE}_replication_latency_ms"),
                "Time from the newest record's timestamp to the target's ack, per batch (MM2 replication-latency-ms).",
                &labels,
                &p.replication_latency_ms,
                now,
            );
            out.gauge(
                "strait_replication_lag_records",
                "Source log end offset minus the mirrored position.",
                &labels,
                lag.records as f64,
            );
            out.gauge(
                "strait_replication_lag_seconds",
                "How long the partition has been behind its source log end (0 when caught up).",
                &labels,
                lag.seconds.unwrap_or_default(),
            );
            out.counter(
                "strait_gap_records_total",
                "Source records deleted at the source (retention) before they were mirrored.",
                &labels,
                p.gap_records as f64,
            );
            out.counter(
                "strait_resume_found_records_total",
                "Records found on the target past the stored position when the partition started (acknowledged before a crash, not stored yet): not sent again.",
                &labels,
                p.resume_found_records as f64,
            );
            out.counter(
                "strait_resume_fallbacks_total",
                "Starts of the partition at its stored position without recognising what the target held past it (identical batches, or the reads failed): that may be written again.",
                &labels,
                p.resume_fallbacks as f64,
            );
            out.counter(
                "strait_source_recreations_total",
                "Times the source topic was found deleted and created again under the same name (a new topic ID): the partition started again from the new topic's log start.",
                &labels,
                p.source_recreations as f64,
            );
            out.gauge(
                "strait_partition_up",
                "1 while the partition is mirrored, 0 after it stopped with an error or while its batches fail past delivery.timeout.ms.",
                &labels,
                f64::from(u8::from(p.error.is_none() && p.failing().is_none())),
            );
        }
        drop(partitions);
        out.gauge(
            "strait_paused_partitions",
            "Partitions whose fetching is paused: their queue is full or their target partition fails.",
            &flow,
            self.paused_partitions() as f64,
        );
        for (kind, count) in self.fetches.lock().expect("stats lock").iter() {
            out.counter(
                "strait_fetch_requests_total",
                "Fetch requests sent: full (every partition) or incremental (KIP-227 fetch session: only what changed).",
                &[("source", source), ("target", target), ("kind", kind)],
                *count as f64,
            );
        }
        let mut connections: BTreeMap<(String, &'static str), i64> = BTreeMap::new();
        for (cluster, role, counter) in self.connections.lock().expect("stats lock").iter() {
            *connections.entry((cluster.clone(), role)).or_default() += counter.get();
        }
        for ((cluster, role), open) in connections {
            out.gauge(
                "strait_connections",
                "Open connections of the flow, by cluster and role: fetch (one per source broker), produce (one per target broker), admin (metadata, offsets, internal topics).",
                &[("source", source), ("target", target), ("cluster", &cluster), ("role", role)],
                open as f64,
            );
        }
        let checkpoints = self.checkpoints.lock().expect("stats lock");
        let mut keys: Vec<_> = checkpoints.keys().collect();
        keys.sort();
        for key in keys {
            let (group, topic, partition) = key;
            let partition = partition.to_string();
            out.window(
                "kafka_connect_mirror_checkpoint_connector_checkpoint_latency_ms",
                "Time from reading the group's offsets to the target's ack of the checkpoint (MM2 checkpoint-latency-ms).",
                &[
                    ("source", source),
                    ("target", target),
                    ("group", group.as_str()),
                    ("topic", topic.as_str()),
                    ("partition", partition.as_str()),
                ],
                &checkpoints[key],
                now,
            );
        }
        drop(checkpoints);
        for ((group, topic, partition), rereads) in self.rereads.lock().expect("stats lock").iter() {
            out.gauge(
                "strait_checkpoint_rereads",
                "Records the group would re-read if it failed over now, at its translated offset: 0 when the translation is exact, more when the group is ahead of the mirror.",
                &[
                    ("source", source),
                    ("target", target),
                    ("group", group.as_str()),
                    ("topic", topic.as_str()),
                    ("partition", &partition.to_string()),
                ],
                *rereads as f64,
            );
        }
        for (topic, records) in self.unreadable_records_by_topic() {
            out.counter(
                "strait_unreadable_records_total",
                "Records of the flow's progress or offset-map topic skipped at a load because they cannot be read: a position goes back to the last readable one (or the log start), a partition's offset map starts again.",
                &[("source", source), ("target", target), ("topic", topic.as_str())],
                records as f64,
            );
        }
        for ((topic, partition), bytes) in self.offset_map_bytes.lock().expect("stats lock").iter() {
            out.gauge(
                "strait_offset_map_bytes",
                "The stored size of the partition's offset map (where every mirrored record landed), after the last prune.",
                &[
                    ("source", source),
                    ("target", target),
                    ("topic", topic.as_str()),
                    ("partition", &partition.to_string()),
                ],
                *bytes as f64,
            );
        }
        out.histogram(
            "strait_batch_latency_seconds",
            "Time from a batch's fetch response to the target's acknowledgement: what Strait adds to the latency.",
            &[("source", source), ("target", target)],
            &self.totals.in_strait.lock().expect("stats lock"),
        );
        for ((cluster, api), histogram) in self.requests.lock().expect("stats lock").iter() {
            out.histogram(
                "strait_request_latency_seconds",
                "Fetch and Produce request latencies of the data path.",
                &[
                    ("source", source),
                    ("target", target),
                    ("cluster", cluster),
                    ("api", api),
                ],
                histogram,
            );
        }
        for ((cluster, api, code), count) in self.errors.lock().expect("stats lock").iter() {
            out.counter(
                "strait_errors_total",
                "Failed requests of the data path, by Kafka error code.",
                &[
                    ("source", source),
                    ("target", target),
                    ("cluster", cluster),
                    ("api", api),
                    ("code", code),
                ],
                *count as f64,
            );
        }
    }
}
