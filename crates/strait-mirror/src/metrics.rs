//! The building blocks of Strait's metrics: Kafka-style windowed statistics, a latency
//! histogram, and the Prometheus text format.

use std::fmt::Write;

/// Appends the io_uring byte path's counts (`strait.io`), once the process has set its ring up.
pub fn write_io_prometheus(out: &mut PrometheusText) {
    let Some(ring) = strait_client::Ring::started() else {
        return;
    };
    let stats = ring.stats();
    out.gauge(
        "strait_io_uring_connections",
        "Broker connections whose bytes go through io_uring now (strait.io).",
        &[],
        stats.sockets() as f64,
    );
    for (name, help, value) in [
        (
            "strait_io_zerocopy_sends_total",
            "io_uring: requests sent zero-copy (IORING_OP_SENDMSG_ZC, sends of 8 KiB or more).",
            stats.zerocopy_sends(),
        ),
        (
            "strait_io_zerocopy_bytes_total",
            "io_uring: bytes the zero-copy sends carried.",
            stats.zerocopy_bytes(),
        ),
        (
            "strait_io_zerocopy_notifications_total",
            "io_uring: the kernel's notifications that it was done with a zero-copy send's buffers (only then are they released).",
            stats.zerocopy_notifications(),
        ),
        (
            "strait_io_zerocopy_copied_total",
            "io_uring: notifications saying the kernel copied after all (a peer on the same host, or a device that cannot send from user pages).",
            stats.zerocopy_copied(),
        ),
    ] {
        out.counter(name, help, &[], value as f64);
    }
}

/// Length of one sample of a [`Window`] (Kafka `Metrics` default `metrics.sample.window.ms`).
const SAMPLE_MS: i64 = 30_000;

/// Upper bounds (seconds) of the request latency histogram buckets.
pub(crate) const LATENCY_BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0];

#[derive(Debug, Clone, Copy)]
struct Sample {
    start_ms: i64,
    count: u64,
    sum: f64,
    min: f64,
    max: f64,
}

impl Sample {
    fn new(start_ms: i64) -> Self {
        Sample {
            start_ms,
            count: 0,
            sum: 0.0,
            min: f64::INFINITY,
            max: f64::NEG_INFINITY,
        }
    }
}

/// A value measured over the last minute the way Kafka's `SampledStat` does it (two samples of
/// 30 s), so that `-min`, `-max`, `-avg` and `-rate` mean what they mean in MM2's JMX metrics.
#[derive(Debug, Clone)]
pub(crate) struct Window {
    samples: [Sample; 2],
    current: usize,
    /// The last value recorded (MM2's plain `record-age-ms`, `replication-latency-ms`).
    last: Option<f64>,
}

impl Window {
    pub(crate) fn new(now_ms: i64) -> Self {
        Window {
            samples: [Sample::new(now_ms), Sample::new(now_ms - SAMPLE_MS)],
            current: 0,
            last: None,
        }
    }

    pub(crate) fn record(&mut self, value: f64, now_ms: i64) {
        if now_ms - self.samples[self.current].start_ms >= SAMPLE_MS {
            self.current = 1 - self.current;
            self.samples[self.current] = Sample::new(now_ms);
        }
        let sample = &mut self.samples[self.current];
        sample.count += 1;
        sample.sum += value;
        sample.min = sample.min.min(value);
        sample.max = sample.max.max(value);
        self.last = Some(value);
    }

    fn live(&self, now_ms: i64) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |s| now_ms - s.start_ms < 2 * SAMPLE_MS && s.count > 0)
    }

    pub(crate) fn last(&self) -> Option<f64> {
        self.last
    }

    pub(crate) fn min(&self, now_ms: i64) -> Option<f64> {
        self.live(now_ms).map(|s| s.min).reduce(f64::min)
    }

    pub(crate) fn max(&self, now_ms: i64) -> Option<f64> {
        self.live(now_ms).map(|s| s.max).reduce(f64::max)
    }

    pub(crate) fn avg(&self, now_ms: i64) -> Option<f64> {
        let (count, sum) = self
            .live(now_ms)
            .fold((0u64, 0.0), |(c, s), sample| (c + sample.count, s + sample.sum));
        (count > 0).then(|| sum / count as f64)
    }

    /// The sum of the values per second, over at least one sample length as Kafka's `Rate`
    /// does (so a fresh window does not report a burst as a huge rate).
    pub(crate) fn rate(&self, now_ms: i64) -> f64 {
        let live: Vec<&Sample> = self.live(now_ms).collect();
        let Some(oldest) = live.iter().map(|s| s.start_ms).min() else {
            return 0.0;
        };
        let elapsed_ms = (now_ms - oldest).max(SAMPLE_MS);
        live.iter().map(|s| s.sum).sum::<f64>() / (elapsed_ms as f64 / 1000.0)
    }
}

/// A Prometheus histogram of durations in seconds.
#[derive(Debug, Clone, Default)]
pub(crate) struct Histogram {
    counts: [u64; LATENCY_BUCKETS.len()],
    count: u64,
    sum: f64,
}

impl Histogram {
    pub(crate) fn observe(&mut self, seconds: f64) {
        for (bound, count) in LATENCY_BUCKETS.iter().zip(&mut self.counts) {
            if seconds <= *bound {
                *count += 1;
            }
        }
        self.count += 1;
        self.sum += seconds;
    }
}

/// Prometheus text exposition (format 0.0.4), one metric family after the other.
#[derive(Debug, Default)]
pub struct PrometheusText {
    text: String,
    families: std::collections::BTreeSet<String>,
}

/// Label pairs of one sample.
pub(crate) type Labels<'a> = &'a [(&'a str, &'a str)];

impl PrometheusText {
    /// The text so far.
    pub fn finish(self) -> String {
        self.text
    }

    /// Writes `# HELP` and `# TYPE` once per family.
    fn family(&mut self, name: &str, kind: &str, help: &str) {
        if self.families.insert(name.to_owned()) {
            let _ = writeln!(self.text, "# HELP {name} {help}");
            let _ = writeln!(self.text, "# TYPE {name} {kind}");
        }
    }

    fn sample(&mut self, name: &str, labels: Labels<'_>, value: f64) {
        self.text.push_str(name);
        if !labels.is_empty() {
            self.text.push('{');
            for (i, (key, value)) in labels.iter().enumerate() {
                if i > 0 {
                    self.text.push(',');
                }
                let _ = write!(self.text, "{key}=\"{}\"", escape(value));
            }
            self.text.push('}');
        }
        let _ = writeln!(self.text, " {}", number(value));
    }

    pub(crate) fn counter(&mut self, name: &str, help: &str, labels: Labels<'_>, value: f64) {
        self.family(name, "counter", help);
        self.sample(name, labels, value);
    }

    pub(crate) fn gauge(&mut self, name: &str, help: &str, labels: Labels<'_>, value: f64) {
        self.family(name, "gauge", help);
        self.sample(name, labels, value);
    }

    /// MM2's last/min/max/avg attributes of one windowed value, as four gauges.
    pub(crate) fn window(&mut self, name: &str, help: &str, labels: Labels<'_>, window: &Window, now_ms: i64) {
        let stats = [
            ("", window.last()),
            ("_min", window.min(now_ms)),
            ("_max", window.max(now_ms)),
            ("_avg", window.avg(now_ms)),
        ];
        for (suffix, value) in stats {
            // Like Kafka's NaN for an empty window, but Prometheus prefers an absent sample.
            if let Some(value) = value {
                self.gauge(&format!("{name}{suffix}"), help, labels, value);
            }
        }
    }

    pub(crate) fn histogram(&mut self, name: &str, help: &str, labels: Labels<'_>, histogram: &Histogram) {
        self.family(name, "histogram", help);
        let bucket = format!("{name}_bucket");
        for (bound, count) in LATENCY_BUCKETS.iter().zip(&histogram.counts) {
            let le = number(*bound);
            let with_le: Vec<(&str, &str)> = labels.iter().copied().chain([("le", le.as_str())]).collect();
            self.sample(&bucket, &with_le, *count as f64);
        }
        let with_inf: Vec<(&str, &str)> = labels.iter().copied().chain([("le", "+Inf")]).collect();
        self.sample(&bucket, &with_inf, histogram.count as f64);
        self.sample(&format!("{name}_sum"), labels, histogram.sum);
        self.sample(&format!("{name}_count"), labels, histogram.count as f64);
    }
}

fn escape(value: &str) -> String {
    value.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

fn number(value: f64) -> String {
    if value.fract() == 0.0 && value.abs() < 1e15 {
        format!("{}", value as i64)
    } else {
        format!("{value}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn window_keeps_one_minute_like_kafka() {
        let mut window = Window::new(0);
        window.record(10.0, 1_000);
        window.record(30.0, 2_000);
        assert_eq!(window.last(), Some(30.0));
        assert_eq!(window.min(3_000), Some(10.0));
        assert_eq!(window.max(3_000), Some(30.0));
        assert_eq!(window.avg(3_000), Some(20.0));
        // 40 over at least 30 s.
        assert!((window.rate(3_000) - 40.0 / 30.0).abs() < 1e-9);
        window.record(5.0, 31_000);
        assert_eq!(window.min(31_000), Some(5.0));
        // Both samples are older than a minute: nothing is left but the last value.
        assert_eq!(window.avg(200_000), None);
        assert_eq!(window.rate(200_000), 0.0);
        assert_eq!(window.last(), Some(5.0));
    }

    #[test]
    fn prometheus_text_format() {
        let mut text = PrometheusText::default();
        text.counter("a_total", "Help.", &[("topic", "x\"y")], 3.0);
        text.counter("a_total", "Help.", &[("topic", "z")], 0.5);
        let mut histogram = Histogram::default();
        histogram.observe(0.003);
        histogram.observe(20.0);
        text.histogram("lat_seconds", "Latency.", &[("api", "Fetch")], &histogram);
        let text = text.finish();
        assert!(text.starts_with("# HELP a_total Help.\n# TYPE a_total counter\na_total{topic=\"x\\\"y\"} 3\n"));
        assert!(text.contains("a_total{topic=\"z\"} 0.5\n"));
        assert_eq!(text.matches("# TYPE a_total").count(), 1);
        assert!(text.contains("lat_seconds_bucket{api=\"Fetch\",le=\"0.0025\"} 0\n"));
        assert!(text.contains("lat_seconds_bucket{api=\"Fetch\",le=\"0.005\"} 1\n"));
        assert!(text.contains("lat_seconds_bucket{api=\"Fetch\",le=\"10\"} 1\n"));
        assert!(text.contains("lat_seconds_bucket{api=\"Fetch\",le=\"+Inf\"} 2\n"));
        assert!(text.contains("lat_seconds_count{api=\"Fetch\"} 2\n"));
    }
}
