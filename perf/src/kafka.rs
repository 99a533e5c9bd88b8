//! Topic chores on the clusters: batched creation and deletion, end offsets, a scan of the
//! record batches a topic holds, and a count of its committed records for transactional targets.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Context;
use strait_client::kafka_protocol::error::ResponseError;
use strait_client::kafka_protocol::messages::delete_topics_request::DeleteTopicState;
use strait_client::kafka_protocol::messages::{ApiKey, DeleteTopicsRequest};
use strait_client::{KafkaClient, NewTopic, OffsetSpec};

/// Creates `topics`, each with `partitions` partitions, in CreateTopics requests of up to 5 000
/// partitions each (the KRaft controller refuses a request that makes more than 10 000 metadata
/// records, one per partition and one per topic: POLICY_VIOLATION "excessively large batch
/// operation"), then waits until every partition answers.
pub async fn create_topics(client: &KafkaClient, topics: &[String], partitions: i32) -> anyhow::Result<()> {
    let per_request = (5_000 / partitions.max(1)).max(1) as usize;
    for chunk in topics.chunks(per_request) {
        let new: Vec<NewTopic> = chunk
            .iter()
            .map(|name| NewTopic {
                name: name.clone(),
                partitions,
                replication_factor: 1,
                configs: vec![],
            })
            .collect();
        client
            .create_topics(&new)
            .await
            .with_context(|| format!("creating {} topics", new.len()))?;
    }
    // Metadata names leaders before the brokers have created the partitions' logs (thousands
    // take a while); a producer that starts then meets NOT_LEADER_OR_FOLLOWER and, idempotent,
    // can stall on OUT_OF_ORDER_SEQUENCE_NUMBER. ListOffsets answers once the leader has the log.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(300);
    for topic in topics {
        let metadata = client.wait_for_leaders(topic, Duration::from_secs(300)).await?;
        let all: Vec<i32> = metadata.partitions.iter().map(|p| p.partition).collect();
        loop {
            match client.list_offsets(topic, &all, OffsetSpec::Latest).await {
                Ok(offsets) if offsets.len() == all.len() => break,
                result => {
                    anyhow::ensure!(
                        tokio::time::Instant::now() < deadline,
                        "{topic}: partitions not ready after 300 s ({:?})",
                        result.err()
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            }
        }
    }
    Ok(())
}

/// Deletes `topics` (missing ones are fine) in one DeleteTopics request.
pub async fn delete_topics(client: &KafkaClient, topics: &[String]) -> anyhow::Result<()> {
    if topics.is_empty() {
        return Ok(());
    }
    let connection = client.any_connection().await?;
    let version = connection.version(ApiKey::DeleteTopics)?;
    let names = || topics.iter().map(|t| strait_client::topic_name(t));
    let request = if version >= 6 {
        DeleteTopicsRequest::default().with_topics(
            names()
                .map(|n| DeleteTopicState::default().with_name(Some(n)))
                .collect(),
        )
    } else {
        DeleteTopicsRequest::default().with_topic_names(names().collect())
    }
    .with_timeout_ms(60_000);
    let response = connection.send_version(&request, version).await?;
    for result in &response.responses {
        let checked = strait_client::Error::check(
            result.error_code,
            || format!("DeleteTopics {:?}", result.name),
            result.error_message.as_deref(),
        );
        match checked {
            // UNKNOWN_TOPIC_OR_PARTITION: already gone.
            Err(error) if !error.is(ResponseError::UnknownTopicOrPartition) => return Err(error.into()),
            _ => {}
        }
    }
    Ok(())
}

/// The end offset of every partition of `topic` (empty if it does not exist yet).
pub async fn end_offsets(client: &KafkaClient, topic: &str) -> anyhow::Result<BTreeMap<i32, i64>> {
    let Some(t) = client
        .metadata(Some(&[topic]))
        .await?
        .topics
        .remove(topic)
        .filter(|t| t.error == 0)
    else {
        return Ok(BTreeMap::new());
    };
    let partitions: Vec<i32> = t.partitions.iter().map(|p| p.partition).collect();
    if partitions.is_empty() {
        return Ok(BTreeMap::new());
    }
    // A topic still being created may have partitions without a leader: nothing yet.
    Ok(client
        .list_offsets(topic, &partitions, OffsetSpec::Latest)
        .await
        .unwrap_or_default())
}

/// The records in `topics` together (sum of end offsets; topics with a log start of 0).
pub async fn records_in(client: &KafkaClient, topics: &[String]) -> anyhow::Result<i64> {
    let mut sum = 0;
    for topic in topics {
        sum += end_offsets(client, topic).await?.values().sum::<i64>();
    }
    Ok(sum)
}

/// What a scan of a topic's record batches found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Contents {
    /// Records (from batch headers).
    pub records: i64,
    /// Record batches.
    pub batches: u64,
    /// Bytes of record batches as stored and sent (compressed size).
    pub bytes: u64,
}

impl std::ops::AddAssign for Contents {
    fn add_assign(&mut self, other: Contents) {
        self.records += other.records;
        self.batches += other.batches;
        self.bytes += other.bytes;
    }
}

/// Reads every batch header of `topics` (16 partitions at a time) and counts records, batches
/// and bytes.
pub async fn scan(client: &KafkaClient, topics: &[String]) -> anyhow::Result<Contents> {
    let mut work = Vec::new();
    for topic in topics {
        for (partition, end) in end_offsets(client, topic).await? {
            if end > 0 {
                work.push((topic.clone(), partition, end));
            }
        }
    }
    let mut total = Contents::default();
    let mut running = tokio::task::JoinSet::new();
    let mut work = work.into_iter();
    loop {
        while running.len() < 16 {
            let Some((topic, partition, end)) = work.next() else {
                break;
            };
            let client = client.clone();
            running.spawn(async move { scan_partition(&client, &topic, partition, end).await });
        }
        match running.join_next().await {
            Some(result) => total += result??,
            None => break,
        }
    }
    Ok(total)
}

async fn scan_partition(client: &KafkaClient, topic: &str, partition: i32, end: i64) -> anyhow::Result<Contents> {
    let mut contents = Contents::default();
    let mut position = 0;
    while position < end {
        let fetched = client
            .fetch(topic, partition, position, 8 << 20, false)
            .await
            .with_context(|| format!("fetching {topic}-{partition} at {position}"))?;
        let before = position;
        for batch in strait_wire::RecordBatches::new(fetched.records) {
            let batch = batch?;
            if batch.next_offset() <= position {
                continue; // A batch before the position (fetches start at batch boundaries).
            }
            position = batch.next_offset();
            contents.batches += 1;
            contents.bytes += batch.size() as u64;
            if !batch.is_control() {
                contents.records += i64::from(batch.records_count());
            }
        }
        anyhow::ensure!(
            position > before,
            "{topic}-{partition}: no progress at offset {position}"
        );
    }
    Ok(contents)
}

/// How a run counts the records a mirror has copied so far.
#[derive(Debug)]
pub enum Tally {
    /// The sum of end offsets: every offset is a record (a target without transactions).
    EndOffsets,
    /// Committed data records, as a read_committed reader sees them: in exactly-once mode
    /// transaction markers take offsets and aborted copies may stay in the log.
    Committed(CommittedCount),
}

impl Tally {
    /// The records in `topics` so far.
    pub async fn records(&mut self, client: &KafkaClient, topics: &[String]) -> anyhow::Result<i64> {
        match self {
            Tally::EndOffsets => records_in(client, topics).await,
            Tally::Committed(count) => count.update(client, topics).await,
        }
    }

    /// Transaction markers and aborted batches passed over (none when counting end offsets).
    pub fn passed_over(&self) -> (u64, u64) {
        match self {
            Tally::EndOffsets => (0, 0),
            Tally::Committed(count) => (count.markers, count.aborted),
        }
    }
}

/// Committed data records of some topics, read `read_committed` partition by partition from
/// where the previous count stopped, so that each batch is fetched once in a whole run.
#[derive(Debug, Default)]
pub struct CommittedCount {
    /// Per topic and partition: the next offset to read, and the committed data before it.
    partitions: BTreeMap<(String, i32), (i64, Contents)>,
    /// Transaction markers (control batches) passed over.
    pub markers: u64,
    /// Batches of aborted transactions passed over.
    pub aborted: u64,
}

impl CommittedCount {
    /// Reads each partition of `topics` on to its last stable offset (16 partitions at a time)
    /// and returns the committed data records counted so far.
    pub async fn update(&mut self, client: &KafkaClient, topics: &[String]) -> anyhow::Result<i64> {
        let mut work = Vec::new();
        for topic in topics {
            for (partition, end) in end_offsets(client, topic).await? {
                let position = self.partitions.get(&(topic.clone(), partition)).map_or(0, |p| p.0);
                if end > position {
                    work.push((topic.clone(), partition, position));
                }
            }
        }
        let mut running = tokio::task::JoinSet::new();
        let mut work = work.into_iter();
        loop {
            while running.len() < 16 {
                let Some((topic, partition, position)) = work.next() else {
                    break;
                };
                let client = client.clone();
                running.spawn(async move {
                    let read = read_committed(&client, &topic, partition, position).await;
                    (topic, partition, read)
                });
            }
            let Some(joined) = running.join_next().await else {
                break;
            };
            let (topic, partition, read) = joined?;
            let read = read?;
            let entry = self.partitions.entry((topic, partition)).or_default();
            entry.0 = read.position;
            entry.1 += read.data;
            self.markers += read.markers;
            self.aborted += read.aborted;
        }
        Ok(self.contents().records)
    }

    /// The committed data records counted in each partition of `topic`.
    pub fn per_partition(&self, topic: &str) -> BTreeMap<i32, i64> {
        self.partitions
            .iter()
            .filter(|((t, _), _)| t == topic)
            .map(|((_, partition), (_, data))| (*partition, data.records))
            .collect()
    }

    /// The committed data counted in all partitions.
    pub fn contents(&self) -> Contents {
        let mut total = Contents::default();
        for (_, data) in self.partitions.values() {
            total += *data;
        }
        total
    }
}

/// What one partition's read_committed read from a position found.
struct CommittedRead {
    /// The offset after the last batch read.
    position: i64,
    /// Committed data batches.
    data: Contents,
    /// Control batches.
    markers: u64,
    /// Batches of aborted transactions.
    aborted: u64,
}

/// Reads one partition `read_committed` from `position` to its last stable offset, sorting the
/// batches as Kafka's consumer does (`strait_wire::AbortedTransactionFilter`).
async fn read_committed(
    client: &KafkaClient,
    topic: &str,
    partition: i32,
    mut position: i64,
) -> anyhow::Result<CommittedRead> {
    let mut read = CommittedRead {
        position,
        data: Contents::default(),
        markers: 0,
        aborted: 0,
    };
    loop {
        let fetched = client
            .fetch(topic, partition, position, 8 << 20, true)
            .await
            .with_context(|| format!("fetching {topic}-{partition} at {position} (read_committed)"))?;
        let before = position;
        let mut aborted = strait_wire::AbortedTransactionFilter::new(fetched.aborted_transactions);
        for batch in strait_wire::RecordBatches::new(fetched.records) {
            let batch = batch?;
            // Every batch in log order, even one before the position (fetches start at batch
            // boundaries): an ABORT marker ends its transaction for the filter.
            let verdict = aborted.check(&batch);
            if batch.next_offset() <= position {
                continue;
            }
            position = batch.next_offset();
            match verdict {
                strait_wire::BatchVerdict::Forward => {
                    read.data.records += i64::from(batch.records_count());
                    read.data.batches += 1;
                    read.data.bytes += batch.size() as u64;
                }
                strait_wire::BatchVerdict::SkipControl => read.markers += 1,
                strait_wire::BatchVerdict::SkipAborted => read.aborted += 1,
            }
        }
        read.position = position;
        // At the last stable offset: what follows is not committed yet.
        if position == before || position >= fetched.last_stable_offset {
            return Ok(read);
        }
    }
}
