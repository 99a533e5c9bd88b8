//! Exact offset translation: where every mirrored source record landed on the target.
//!
//! Strait forwards source batches whole, so consecutive source records land on consecutive
//! target offsets. The mapping changes only where source offsets were skipped (control
//! batches, aborted transactions, compaction gaps), where the target has offsets of its own
//! (the commit markers of exactly-once mode), and where records were written again (a restart
//! after a crash, a resend). Each stretch between such points is a [`Segment`]; a partition's
//! segments, in the order they were written, translate any source offset the mirror covered
//! to the exact target offset of the same record, at any lag.
//!
//! The segments are stored on the target in `strait-offset-map.<source>.internal` (compacted,
//! one partition, named in MM2's internal style so that MM2's and Strait's topic filters skip
//! it): per source partition a head record (where the mapping starts) and chunks of
//! [`CHUNK`] segments, delta-encoded, so that a flush rewrites only the last chunk and a
//! commit marker costs one or two bytes. Chunks wholly below the slowest consumer group (and
//! the source log start) are deleted. MM2's offset-syncs topic is still written beside it, for
//! MM2's tools.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use bytes::{BufMut, Bytes, BytesMut};
use strait_client::KafkaClient;
use strait_wire::varint::{get_varlong, put_varlong};

use crate::internal_topics::{ensure_compacted_topic, read_partition, write_records};
use crate::offset_syncs::OffsetMapping;
use crate::MirrorError;

/// Segments per stored chunk: a flush rewrites at most one chunk per partition.
pub(crate) const CHUNK: usize = 256;

/// Format version of the records' keys and values.
const VERSION: i16 = 0;

/// The chunk number of a partition's head record.
const HEAD: i32 = -1;

/// A stretch of consecutive source records written on consecutive target offsets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Segment {
    /// Source offset of its first record.
    source: i64,
    /// Target offset of its first record.
    target: i64,
    /// Records in it.
    records: i64,
}

impl Segment {
    fn source_end(&self) -> i64 {
        self.source + self.records
    }

    fn target_end(&self) -> i64 {
        self.target + self.records
    }
}

/// What a source offset translates to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Translation {
    /// The target offset of the same record (or, for an offset the source skipped, of the next
    /// record mirrored): a consumer starting there re-reads nothing and skips nothing.
    Exact(i64),
    /// The offset lies beyond what the mirror has written: `target` is the mirror's end on the
    /// target, and a consumer starting there would re-read up to `rereads` records once the
    /// mirror has caught up.
    AheadOfMirror {
        /// The target offset after the last record mirrored.
        target: i64,
        /// Source offsets between the mirror's position and the offset.
        rereads: i64,
    },
    /// The offset lies below where the mapping starts (the mirror started later, or the
    /// mapping below the slowest group was pruned): no exact translation exists.
    BelowMapping {
        /// The first source offset the mapping knows.
        first: i64,
    },
    /// Nothing of the partition is mapped yet.
    Unknown,
}

impl Translation {
    /// The target offset to commit, if there is one; with how many records a consumer starting
    /// there would re-read.
    pub fn offset_and_rereads(&self) -> Option<(i64, i64)> {
        match *self {
            Translation::Exact(target) => Some((target, 0)),
            Translation::AheadOfMirror { target, rereads } => Some((target, rereads)),
            Translation::BelowMapping { .. } | Translation::Unknown => None,
        }
    }
}

impl std::fmt::Display for Translation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Translation::Exact(offset) => write!(f, "exact: offset {offset}"),
            Translation::AheadOfMirror { target, rereads } => write!(
                f,
                "ahead of the mirror: target offset {target} (its end), up to {rereads} records re-read once mirrored"
            ),
            Translation::BelowMapping { first } => write!(
                f,
                "below the mapping (it starts at source offset {first}): never mirrored, or pruned below the slowest group"
            ),
            Translation::Unknown => write!(f, "nothing of the partition is mirrored yet"),
        }
    }
}

/// The mapping of one source partition.
#[derive(Debug, Default)]
pub(crate) struct PartitionMap {
    /// Below this source offset nothing is known (the mirror started there, or pruned).
    floor: Option<i64>,
    /// Segments in the order they were written on the target; the first is the first of chunk
    /// `first_chunk`.
    segments: Vec<Segment>,
    first_chunk: i32,
    /// The lowest chunk changed since the last write, and whether the head changed.
    dirty_chunk: Option<i32>,
    dirty_head: bool,
    /// Chunks pruned whose deletions are not written yet.
    deleted: Vec<i32>,
}

impl PartitionMap {
    /// The mirror starts the partition at `offset`: where the mapping starts, if it is new.
    pub(crate) fn start(&mut self, offset: i64) {
        if self.floor.is_none() {
            self.floor = Some(offset);
            self.dirty_head = true;
        }
    }

    /// An acknowledged run of records.
    pub(crate) fn record(&mut self, source: i64, target: i64, records: i64) {
        if records <= 0 {
            return;
        }
        if self.floor.is_none() {
            self.start(source);
        }
        match self.segments.last_mut() {
            Some(last) if last.source_end() == source && last.target_end() == target => last.records += records,
            _ => self.segments.push(Segment {
                source,
                target,
                records,
            }),
        }
        let changed = self.first_chunk + ((self.segments.len() - 1) / CHUNK) as i32;
        self.dirty_chunk = Some(self.dirty_chunk.map_or(changed, |c| c.min(changed)));
    }

    /// Translates the source offset `offset` (a group's committed position: the next record
    /// it reads), with every source offset below `covered` mirrored or skipped.
    pub(crate) fn translate(&self, offset: i64, covered: Option<i64>) -> Translation {
        let Some(floor) = self.floor else {
            return Translation::Unknown;
        };
        if offset < floor {
            return Translation::BelowMapping { first: floor };
        }
        let Some(last) = self.segments.last() else {
            return Translation::Unknown;
        };
        // Without the mirror's position, what the mapping holds is what it covered.
        let covered = covered.unwrap_or_else(|| self.segments.iter().map(Segment::source_end).max().unwrap_or(0));
        if offset > covered {
            return Translation::AheadOfMirror {
                target: last.target_end(),
                rereads: offset - covered,
            };
        }
        // The last segment written that starts at or before `offset`: written after it come
        // only records past `offset` (a restart resends from its stored position, below which
        // all was acknowledged), so from there on every record is read once. Inside it, the
        // record itself; past its end (a skipped source offset), the next segment's first record.
        let last_at_or_before = self.segments.iter().rposition(|s| s.source <= offset);
        Translation::Exact(match last_at_or_before {
            Some(i) if offset < self.segments[i].source_end() => {
                let s = self.segments[i];
                s.target + (offset - s.source)
            }
            Some(i) => self
                .segments
                .get(i + 1)
                .map_or(self.segments[i].target_end(), |next| next.target),
            // Every record mapped is past `offset`: it starts at the first one written.
            None => self.segments[0].target,
        })
    }

    /// The inverse: the source position of a consumer that read every target offset below
    /// `offset` (its committed position on the target), for a failback. Every mapped source
    /// record it read lies below the answer and every one it did not read at or above it: the
    /// mirror writes a range again only from below where it had got to, so what a consumer
    /// read on the target is a prefix of the source.
    pub(crate) fn untranslate(&self, offset: i64) -> Translation {
        let (Some(floor), Some(first)) = (self.floor, self.segments.first()) else {
            return Translation::Unknown;
        };
        if offset < first.target {
            return Translation::BelowMapping { first: floor };
        }
        // A segment read whole covers the source offsets skipped after it too (markers,
        // compaction gaps): the next segment starts past them.
        let read = self
            .segments
            .iter()
            .enumerate()
            .take_while(|(_, s)| s.target < offset)
            .map(|(i, s)| match self.segments.get(i + 1) {
                Some(next) if offset >= s.target_end() => s.source_end().max(next.source),
                _ => s.source + (offset - s.target).min(s.records),
            })
            .max();
        Translation::Exact(read.unwrap_or(floor))
    }

    /// Deletes the chunks whose records all lie below `offset` (never the last chunk).
    /// Returns the chunk numbers deleted.
    pub(crate) fn prune_below(&mut self, offset: i64) -> Vec<i32> {
        let mut pruned = Vec::new();
        while self.segments.len() > CHUNK && self.segments[..CHUNK].iter().all(|s| s.source_end() <= offset) {
            let next = self.segments[CHUNK].source;
            self.segments.drain(..CHUNK);
            pruned.push(self.first_chunk);
            self.first_chunk += 1;
            // Below the first segment kept nothing is known any more.
            self.floor = Some(self.floor.unwrap_or(next).max(next.min(offset)));
            self.dirty_head = true;
            if let Some(dirty) = self.dirty_chunk.filter(|&d| d < self.first_chunk) {
                self.dirty_chunk = Some(dirty.max(self.first_chunk));
            }
        }
        pruned
    }

    /// The records (chunk number, value) changed since the last take; the head as chunk [`HEAD`].
    fn take_dirty(&mut self) -> Vec<(i32, Bytes)> {
        let mut out = Vec::new();
        if std::mem::take(&mut self.dirty_head) {
            out.push((HEAD, self.encode_head()));
        }
        if let Some(first) = self.dirty_chunk.take() {
            let last = self.first_chunk + (self.segments.len().saturating_sub(1) / CHUNK) as i32;
            for chunk in first.max(self.first_chunk)..=last {
                let from = (chunk - self.first_chunk) as usize * CHUNK;
                let to = (from + CHUNK).min(self.segments.len());
                out.push((chunk, encode_segments(&self.segments[from..to])));
            }
        }
        out
    }

    /// Marks what `take_dirty` took as still to write (a write failed).
    fn redirty(&mut self, chunks: &[i32]) {
        for &chunk in chunks {
            if chunk == HEAD {
                self.dirty_head = true;
            } else if chunk >= self.first_chunk {
                self.dirty_chunk = Some(self.dirty_chunk.map_or(chunk, |c| c.min(chunk)));
            }
        }
    }

    fn encode_head(&self) -> Bytes {
        let mut out = Vec::with_capacity(16);
        out.extend_from_slice(&VERSION.to_be_bytes());
        put_varlong(&mut out, self.floor.unwrap_or(0));
        put_varlong(&mut out, i64::from(self.first_chunk));
        Bytes::from(out)
    }

    /// The stored size of the mapping, in bytes of record values.
    pub(crate) fn stored_bytes(&self) -> usize {
        let chunks = self.segments.chunks(CHUNK).map(|c| encode_segments(c).len());
        self.encode_head().len() + chunks.sum::<usize>()
    }
}

/// Segment encodings: a varint of `records << 2 | tag`, where the tag says how the segment
/// follows the previous one: 0 gaps given (two zigzag varints, source and target), 1 the next
/// target offset is a marker (exactly-once commits), 2 one source offset skipped (a source
/// commit marker), 3 both. The first segment of a chunk gives its offsets in full.
fn encode_segments(segments: &[Segment]) -> Bytes {
    let mut out = Vec::with_capacity(4 + segments.len() * 2);
    out.extend_from_slice(&VERSION.to_be_bytes());
    let mut previous: Option<Segment> = None;
    for s in segments {
        let (source_gap, target_gap) = match previous {
            Some(p) => (s.source - p.source_end(), s.target - p.target_end()),
            None => {
                put_varlong(&mut out, s.source);
                put_varlong(&mut out, s.target);
                (0, 0)
            }
        };
        let tag = match (source_gap, target_gap) {
            (0, 1) if previous.is_some() => 1,
            (1, 0) if previous.is_some() => 2,
            (1, 1) if previous.is_some() => 3,
            _ => 0,
        };
        put_varlong(&mut out, (s.records << 2) | tag);
        if tag == 0 && previous.is_some() {
            put_varlong(&mut out, source_gap);
            put_varlong(&mut out, target_gap);
        }
        previous = Some(*s);
    }
    Bytes::from(out)
}

fn decode_segments(mut input: &[u8]) -> Option<Vec<Segment>> {
    let version = i16::from_be_bytes(input.get(..2)?.try_into().ok()?);
    if version != VERSION {
        return None;
    }
    input = &input[2..];
    let mut segments: Vec<Segment> = Vec::new();
    let first = match input.is_empty() {
        true => return Some(segments),
        false => (get_varlong(&mut input)?, get_varlong(&mut input)?),
    };
    while !input.is_empty() {
        let word = get_varlong(&mut input)?;
        let (records, tag) = (word >> 2, word & 3);
        let (source, target) = match segments.last() {
            None => first,
            Some(p) => {
                let (source_gap, target_gap) = match tag {
                    1 => (0, 1),
                    2 => (1, 0),
                    3 => (1, 1),
                    _ => (get_varlong(&mut input)?, get_varlong(&mut input)?),
                };
                (p.source_end() + source_gap, p.target_end() + target_gap)
            }
        };
        if records <= 0 {
            return None;
        }
        segments.push(Segment {
            source,
            target,
            records,
        });
    }
    Some(segments)
}

/// One partition's mapping from its stored (chunk, value) records, head first; `Err` names
/// the chunk that cannot be read.
fn decode_partition(chunks: &[(i32, Bytes)]) -> Result<PartitionMap, i32> {
    let mut map = PartitionMap::default();
    for (chunk, value) in chunks {
        let chunk = *chunk;
        if chunk == HEAD {
            if value.get(..2) != Some(&VERSION.to_be_bytes()[..]) {
                return Err(chunk);
            }
            let mut input = &value[2..];
            let floor = get_varlong(&mut input).filter(|&floor| floor >= 0).ok_or(chunk)?;
            let first = get_varlong(&mut input).and_then(|first| i32::try_from(first).ok());
            map.first_chunk = first.filter(|&first| first >= 0 && input.is_empty()).ok_or(chunk)?;
            map.floor = Some(floor);
        } else if chunk >= map.first_chunk {
            // Chunks below the head's first were pruned (their deletions may not be compacted yet).
            let expected = map.first_chunk as usize * CHUNK + map.segments.len();
            if chunk as usize * CHUNK != expected {
                return Err(chunk);
            }
            map.segments.extend(decode_segments(value).ok_or(chunk)?);
        }
    }
    Ok(map)
}

fn encode_key(topic: &str, partition: i32, chunk: i32) -> Bytes {
    let mut key = BytesMut::with_capacity(12 + topic.len());
    key.put_i16(VERSION);
    key.put_i16(topic.len() as i16);
    key.put_slice(topic.as_bytes());
    key.put_i32(partition);
    key.put_i32(chunk);
    key.freeze()
}

fn decode_key(key: &[u8]) -> Option<(String, i32, i32)> {
    let mut input = key;
    let take = |input: &mut &[u8], n: usize| -> Option<Vec<u8>> {
        let (head, rest) = (input.get(..n)?.to_vec(), input.get(n..)?);
        *input = rest;
        Some(head)
    };
    if i16::from_be_bytes(take(&mut input, 2)?.try_into().ok()?) != VERSION {
        return None;
    }
    let length = i16::from_be_bytes(take(&mut input, 2)?.try_into().ok()?);
    let topic = String::from_utf8(take(&mut input, usize::try_from(length).ok()?)?).ok()?;
    let partition = i32::from_be_bytes(take(&mut input, 4)?.try_into().ok()?);
    let chunk = i32::from_be_bytes(take(&mut input, 4)?.try_into().ok()?);
    input.is_empty().then_some((topic, partition, chunk))
}

/// The offset mapping of every source partition of one flow, and its topic on the target.
#[derive(Debug)]
pub struct OffsetMap {
    client: KafkaClient,
    cluster: String,
    topic: String,
    partitions: Mutex<HashMap<(String, i32), SharedPartitionMap>>,
    /// Records the load skipped.
    unreadable: usize,
}

/// One partition's mapping, shared by its queue on the data path and the flushes.
pub(crate) type SharedPartitionMap = Arc<Mutex<PartitionMap>>;

impl OffsetMap {
    /// The name of the mapping topic for flows from `source_alias`.
    pub fn topic_name(source_alias: &str) -> String {
        format!("strait-offset-map.{source_alias}.internal")
    }

    /// Opens (creating if needed) the mapping topic of flows from `source_alias` on `client`'s
    /// cluster (the target, `target_alias`) and loads it.
    pub async fn open(
        client: &KafkaClient,
        source_alias: &str,
        target_alias: &str,
        replication_factor: i16,
    ) -> Result<Self, MirrorError> {
        let topic = Self::topic_name(source_alias);
        ensure_compacted_topic(client, target_alias, &topic, 1, replication_factor).await?;
        Self::load(client, target_alias, topic).await
    }

    /// Loads the mapping topic without creating it; `None` if it does not exist.
    pub async fn read(
        client: &KafkaClient,
        source_alias: &str,
        target_alias: &str,
    ) -> Result<Option<Self>, MirrorError> {
        let topic = Self::topic_name(source_alias);
        let metadata = client
            .metadata(Some(&[topic.as_str()]))
            .await
            .map_err(MirrorError::client_at(target_alias))?;
        match metadata.topics.get(&topic) {
            Some(t) if t.error == 0 && !t.partitions.is_empty() => {
                Ok(Some(Self::load(client, target_alias, topic).await?))
            }
            _ => Ok(None),
        }
    }

    async fn load(client: &KafkaClient, cluster: &str, topic: String) -> Result<Self, MirrorError> {
        // The latest value of every key, as compaction will leave it.
        let mut latest: BTreeMap<(String, i32, i32), Option<Bytes>> = BTreeMap::new();
        let mut unreadable = 0;
        for (key, value) in read_partition(client, cluster, &topic, 0).await? {
            let Some((source_topic, partition, chunk)) = key.as_deref().and_then(decode_key) else {
                tracing::warn!(topic, "skipping a record that is not an offset mapping");
                unreadable += 1;
                continue;
            };
            latest.insert((source_topic, partition, chunk), value);
        }
        let mut stored: BTreeMap<(String, i32), Vec<(i32, Bytes)>> = BTreeMap::new();
        for ((source_topic, partition, chunk), value) in latest {
            let chunks = stored.entry((source_topic, partition)).or_default();
            if let Some(value) = value {
                chunks.push((chunk, value));
            }
        }
        let mut partitions = HashMap::new();
        for ((source_topic, partition), chunks) in stored {
            let map = decode_partition(&chunks).unwrap_or_else(|chunk| {
                // One bad record must not stop the flow (a restart would meet it again): the
                // partition's mapping starts afresh where the mirror goes on, past every chunk
                // stored, and offsets below are translated as before the mapping started.
                tracing::warn!(
                    topic,
                    "the offset mapping of {source_topic}-{partition} (chunk {chunk}) cannot be read: skipped; \
                     the partition's mapping starts again where the mirror goes on"
                );
                unreadable += 1;
                let last = chunks.iter().map(|&(chunk, _)| chunk).max().unwrap_or(HEAD);
                PartitionMap {
                    first_chunk: last.saturating_add(1).max(0),
                    ..PartitionMap::default()
                }
            });
            partitions.insert((source_topic, partition), Arc::new(Mutex::new(map)));
        }
        Ok(OffsetMap {
            client: client.clone(),
            cluster: cluster.into(),
            topic,
            partitions: Mutex::new(partitions),
            unreadable,
        })
    }

    /// Records skipped at load because they could not be read (each costs its partition's
    /// exact translation below where the mirror went on).
    pub(crate) fn unreadable_records(&self) -> usize {
        self.unreadable
    }

    /// Loads the stored mapping of `partitions` again, replacing what this process holds of
    /// them: another member of the group mirrored them meanwhile. Only for partitions the data
    /// path does not mirror now (it would record into the replaced mapping).
    pub(crate) async fn reload(&self, partitions: &HashSet<(String, i32)>) -> Result<(), MirrorError> {
        let mut fresh = Self::load(&self.client, &self.cluster, self.topic.clone())
            .await?
            .partitions
            .into_inner()
            .expect("offset map lock");
        let mut held = self.partitions.lock().expect("offset map lock");
        for key in partitions {
            match fresh.remove(key) {
                Some(map) => held.insert(key.clone(), map),
                None => held.remove(key),
            };
        }
        Ok(())
    }

    /// The mapping of one partition, for the data path to record into; `start` is where the
    /// mirror starts it (where the mapping starts, if it is new).
    pub(crate) fn partition(&self, topic: &str, partition: i32, start: i64) -> SharedPartitionMap {
        let map = self
            .partitions
            .lock()
            .expect("offset map lock")
            .entry((topic.to_owned(), partition))
            .or_default()
            .clone();
        map.lock().expect("offset map lock").start(start);
        map
    }

    /// Takes note of an acknowledged run of records.
    pub fn record(&self, mapping: &OffsetMapping) {
        let map = self.partition(&mapping.source_topic, mapping.partition, mapping.source_offset);
        let mut map = map.lock().expect("offset map lock");
        map.record(mapping.source_offset, mapping.target_offset, i64::from(mapping.records));
    }

    /// Translates a group's committed source offset; `covered` is the mirror's position (every
    /// source offset below it mirrored or skipped), if known.
    pub fn translate(&self, topic: &str, partition: i32, offset: i64, covered: Option<i64>) -> Translation {
        self.with_partition(topic, partition, |map| map.translate(offset, covered))
    }

    /// Translates a committed target offset back to the source (see
    /// [`PartitionMap::untranslate`]); `topic` is the source topic.
    pub fn untranslate(&self, topic: &str, partition: i32, offset: i64) -> Translation {
        self.with_partition(topic, partition, |map| map.untranslate(offset))
    }

    /// `f` on the partition's map, or `Unknown` when nothing of the partition is known.
    fn with_partition(&self, topic: &str, partition: i32, f: impl FnOnce(&PartitionMap) -> Translation) -> Translation {
        let map = self
            .partitions
            .lock()
            .expect("offset map lock")
            .get(&(topic.to_owned(), partition))
            .cloned();
        map.map_or(Translation::Unknown, |map| f(&map.lock().expect("offset map lock")))
    }

    /// The mapping topic.
    pub(crate) fn topic(&self) -> &str {
        &self.topic
    }

    /// The records (key, value) changed since the last take, to write with
    /// [`OffsetMap::write`] or in a transaction; what is not written must be given back with
    /// [`OffsetMap::untake`].
    pub(crate) fn take(&self) -> Vec<(Bytes, Bytes)> {
        let partitions: Vec<_> = self
            .partitions
            .lock()
            .expect("offset map lock")
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut records = Vec::new();
        for ((topic, partition), map) in partitions {
            for (chunk, value) in map.lock().expect("offset map lock").take_dirty() {
                records.push((encode_key(&topic, partition, chunk), value));
            }
        }
        records
    }

    /// Gives back records [`OffsetMap::take`] took and that were not written.
    pub(crate) fn untake(&self, records: &[(Bytes, Bytes)]) {
        let mut chunks: HashMap<(String, i32), Vec<i32>> = HashMap::new();
        for (key, _) in records {
            if let Some((topic, partition, chunk)) = decode_key(key) {
                chunks.entry((topic, partition)).or_default().push(chunk);
            }
        }
        let partitions = self.partitions.lock().expect("offset map lock");
        for (key, chunks) in chunks {
            if let Some(map) = partitions.get(&key) {
                map.lock().expect("offset map lock").redirty(&chunks);
            }
        }
    }

    /// Writes what changed since the last flush. Must precede the flush of the positions it
    /// maps: translation trusts every position stored.
    pub async fn flush(&self) -> Result<(), MirrorError> {
        let records = self.take();
        for (i, chunk) in records.chunks(500).enumerate() {
            if let Err(error) = write_records(&self.client, &self.cluster, &self.topic, 0, chunk.to_vec()).await {
                self.untake(&records[i * 500..]);
                return Err(error);
            }
        }
        Ok(())
    }

    /// Deletes the stored chunks of `topic`-`partition` wholly below `offset` (the slowest
    /// group, or the source log start), so that the mapping of a long-lived partition stays
    /// small. The new head and the deletions go in one batch, head first: whatever else is
    /// stored, a load then skips the deleted chunks. Returns how many chunks were deleted.
    pub(crate) async fn prune(&self, topic: &str, partition: i32, offset: i64) -> Result<usize, MirrorError> {
        let map = self
            .partitions
            .lock()
            .expect("offset map lock")
            .get(&(topic.to_owned(), partition))
            .cloned();
        let Some(map) = map else { return Ok(0) };
        let (head, deleted) = {
            let mut map = map.lock().expect("offset map lock");
            let pruned = map.prune_below(offset);
            map.deleted.extend(pruned);
            if map.deleted.is_empty() {
                return Ok(0);
            }
            map.dirty_head = false;
            (map.encode_head(), std::mem::take(&mut map.deleted))
        };
        let records = std::iter::once((encode_key(topic, partition, HEAD), Some(head)))
            .chain(deleted.iter().map(|&chunk| (encode_key(topic, partition, chunk), None)));
        if let Err(error) = write_records(&self.client, &self.cluster, &self.topic, 0, records).await {
            let mut map = map.lock().expect("offset map lock");
            map.dirty_head = true;
            map.deleted.extend(deleted);
            return Err(error);
        }
        Ok(deleted.len())
    }

    /// The partitions whose mapping spans more than one chunk: the only ones pruning can shrink.
    pub(crate) fn prunable(&self) -> Vec<(String, i32)> {
        let partitions = self.partitions.lock().expect("offset map lock");
        partitions
            .iter()
            .filter(|(_, map)| map.lock().expect("offset map lock").segments.len() > CHUNK)
            .map(|(key, _)| key.clone())
            .collect()
    }

    /// The stored size of each partition's mapping, in bytes of record values.
    pub fn stored_bytes(&self) -> BTreeMap<(String, i32), usize> {
        self.stored_bytes_of(|_| true)
    }

    /// [`OffsetMap::stored_bytes`] of the partitions `held` says this process mirrors.
    pub(crate) fn stored_bytes_of(&self, held: impl Fn(&(String, i32)) -> bool) -> BTreeMap<(String, i32), usize> {
        let partitions = self.partitions.lock().expect("offset map lock");
        partitions
            .iter()
            .filter(|(k, _)| held(k))
            .map(|(k, v)| (k.clone(), v.lock().expect("offset map lock").stored_bytes()))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(runs: &[(i64, i64, i64)]) -> PartitionMap {
        let mut map = PartitionMap::default();
        for &(source, target, records) in runs {
            map.record(source, target, records);
        }
        map
    }

    #[test]
    fn inside_a_batch_and_far_behind_translation_is_exact() {
        // Batches of 200 forwarded whole, 37 records further on at the target.
        let runs: Vec<(i64, i64, i64)> = (0..1000).map(|b| (b * 200, b * 200 + 37, 200)).collect();
        let map = map(&runs);
        assert_eq!(map.segments.len(), 1, "contiguous runs are one segment");
        for offset in [0, 1, 777, 12_345, 150_003, 199_999] {
            assert_eq!(map.translate(offset, Some(200_000)), Translation::Exact(offset + 37));
        }
        assert_eq!(
            map.translate(200_000, Some(200_000)),
            Translation::Exact(200_037),
            "caught up"
        );
    }

    #[test]
    fn skipped_source_offsets_and_target_markers_translate_to_the_next_record() {
        // Source offsets 100 and 201 are markers (skipped); target offsets 100 and 200 are
        // the mirror's own commit markers.
        let map = map(&[(0, 0, 100), (101, 101, 100), (202, 202, 50)]);
        assert_eq!(map.translate(50, None), Translation::Exact(50));
        assert_eq!(
            map.translate(100, None),
            Translation::Exact(101),
            "a skipped offset: the next record"
        );
        assert_eq!(map.translate(101, None), Translation::Exact(101));
        assert_eq!(map.translate(150, None), Translation::Exact(150));
        assert_eq!(map.translate(201, None), Translation::Exact(202));
        assert_eq!(map.translate(252, Some(252)), Translation::Exact(252));
    }

    #[test]
    fn after_a_crash_the_latest_copy_is_used_so_nothing_is_read_twice() {
        // 0..1000 landed at 0..1000; the mirror had stored position 599 when killed, so it
        // wrote 600.. again from target offset 1000.
        let map = map(&[(0, 0, 1000), (600, 1000, 900)]);
        assert_eq!(
            map.translate(300, None),
            Translation::Exact(300),
            "before the duplicates"
        );
        assert_eq!(
            map.translate(600, None),
            Translation::Exact(1000),
            "the second copy: from there on every record once"
        );
        assert_eq!(map.translate(777, None), Translation::Exact(1177));
        assert_eq!(map.translate(1200, None), Translation::Exact(1600));
    }

    #[test]
    fn a_target_position_maps_back_to_the_first_source_record_not_read() {
        // 37 records of the target's own first; a crash made the mirror write 600..1000 again.
        let crashed = map(&[(0, 37, 1000), (600, 1037, 900)]);
        assert_eq!(
            crashed.untranslate(10),
            Translation::BelowMapping { first: 0 },
            "before the mirror wrote"
        );
        assert_eq!(crashed.untranslate(37), Translation::Exact(0));
        assert_eq!(crashed.untranslate(37 + 777), Translation::Exact(777));
        assert_eq!(
            crashed.untranslate(1037),
            Translation::Exact(1000),
            "the first copy read whole"
        );
        assert_eq!(
            crashed.untranslate(1037 + 300),
            Translation::Exact(1000),
            "inside the second copy: 600..1000 were read already"
        );
        assert_eq!(crashed.untranslate(1037 + 401), Translation::Exact(1001));
        assert_eq!(
            crashed.untranslate(5000),
            Translation::Exact(1500),
            "past the end: all of it"
        );
        // Skipped source offsets and target markers: the next source record not read.
        let marked = map(&[(0, 0, 100), (101, 101, 100), (202, 202, 50)]);
        assert_eq!(
            marked.untranslate(100),
            Translation::Exact(101),
            "offset 100 was a marker"
        );
        assert_eq!(marked.untranslate(101), Translation::Exact(101));
        assert_eq!(marked.untranslate(102), Translation::Exact(102));
        // Round trip: forward then back is the same record.
        for offset in [0, 99, 101, 150, 202, 251] {
            let Translation::Exact(target) = marked.translate(offset, None) else {
                panic!("{offset} translates")
            };
            assert_eq!(marked.untranslate(target), Translation::Exact(offset));
        }
    }

    #[test]
    fn beyond_the_mirror_and_below_the_mapping_are_said_so() {
        let mut map = PartitionMap::default();
        assert_eq!(map.translate(5, Some(0)), Translation::Unknown);
        map.start(1000);
        map.record(1000, 0, 100);
        assert_eq!(
            map.translate(1150, Some(1100)),
            Translation::AheadOfMirror {
                target: 100,
                rereads: 50
            }
        );
        assert_eq!(
            map.translate(999, Some(1100)),
            Translation::BelowMapping { first: 1000 }
        );
        assert_eq!(map.translate(1000, Some(1100)), Translation::Exact(0));
    }

    #[test]
    fn segments_survive_encoding_and_a_commit_marker_costs_a_byte_or_two() {
        let runs: Vec<(i64, i64, i64)> = (0..600).map(|i| (i * 30, 5_000_000_000 + i * 31, 30)).collect();
        let mut map = map(&runs);
        // A duplicate after a crash and a compaction gap.
        map.record(17_000, 5_000_019_000, 40);
        map.record(17_100, 5_000_019_040, 10);
        let encoded: usize = map.segments.chunks(CHUNK).map(|c| encode_segments(c).len()).sum();
        assert!(encoded < 602 * 2 + 64, "{encoded} bytes for 602 segments");
        let decoded: Vec<Segment> = map
            .segments
            .chunks(CHUNK)
            .flat_map(|c| decode_segments(&encode_segments(c)).unwrap())
            .collect();
        assert_eq!(decoded, map.segments);
        assert_eq!(decode_segments(&[0, 0, 1]), None, "a truncated chunk");
    }

    #[test]
    fn pruning_deletes_whole_chunks_below_the_offset_and_keeps_translation_above_it() {
        let runs: Vec<(i64, i64, i64)> = (0..(3 * CHUNK as i64)).map(|i| (i * 10, i * 11, 10)).collect();
        let mut map = map(&runs);
        let before = map.translate(6_001, None);
        let _ = map.take_dirty();
        assert_eq!(
            map.prune_below(10 * CHUNK as i64 - 1),
            Vec::<i32>::new(),
            "not all of chunk 0 below"
        );
        assert_eq!(map.prune_below(10 * CHUNK as i64 + 5), vec![0]);
        assert_eq!(map.prune_below(1_000_000), vec![1], "never the last chunk");
        assert_eq!(map.translate(6_001, None), before, "the last chunk still translates");
        assert_eq!(map.translate(6_000, None), Translation::Exact(6_600));
        assert_eq!(
            map.translate(100, None),
            Translation::BelowMapping {
                first: 20 * CHUNK as i64
            }
        );
        let dirty: Vec<i32> = map.take_dirty().into_iter().map(|(c, _)| c).collect();
        assert_eq!(dirty, [HEAD], "only the head changed");
    }

    #[test]
    fn a_flush_rewrites_only_the_chunks_that_changed() {
        let runs: Vec<(i64, i64, i64)> = (0..(2 * CHUNK as i64 + 3)).map(|i| (i * 10, i * 11, 10)).collect();
        let mut map = map(&runs);
        let chunks: Vec<i32> = map.take_dirty().into_iter().map(|(c, _)| c).collect();
        assert_eq!(chunks, [HEAD, 0, 1, 2]);
        map.record(100_000, 200_000, 5);
        let chunks: Vec<i32> = map.take_dirty().into_iter().map(|(c, _)| c).collect();
        assert_eq!(chunks, [2]);
        map.redirty(&[2]);
        assert_eq!(map.take_dirty().len(), 1, "given back after a failed write");
    }

    /// The sizes the closing note reports: `cargo test -p strait-mirror map_of_a_long -- --nocapture`.
    #[test]
    fn the_map_of_a_long_lived_partition_stays_a_few_kib() {
        // 1 000 000 records in batches of 200 with a crash every 100 000: each restart resends
        // from the last stored position, up to a few thousand records back.
        let mut crashes = PartitionMap::default();
        let (mut source, mut target, mut next_crash) = (0, 0, 100_000);
        while source < 1_000_000 {
            crashes.record(source, target, 200);
            source += 200;
            target += 200;
            if source >= next_crash {
                source -= 1_000 + (next_crash / 100_000) * 200;
                next_crash += 100_000;
            }
        }
        let crashed = crashes.stored_bytes();
        // Exactly-once for an hour, committing every second: each transaction leaves a marker
        // on the target after a varying number of records; the source is transactional too.
        let mut commits = PartitionMap::default();
        let (mut source, mut target) = (0, 0);
        for second in 0..3_600_i64 {
            let records = 900 + (second * 7919) % 200;
            commits.record(source, target, records);
            source += records + i64::from(second % 3 == 0);
            target += records + 1;
        }
        let hour = commits.stored_bytes();
        println!("offset map per partition: {crashed} bytes after 1 000 000 records with a crash every 100 000, {hour} bytes after an hour of 1 s exactly-once commits");
        assert!(crashed < 256, "{crashed} bytes");
        assert!(hour <= 8 * 1024, "{hour} bytes");
    }

    #[test]
    fn keys_round_trip() {
        assert_eq!(
            decode_key(&encode_key("orders", 7, HEAD)),
            Some(("orders".into(), 7, HEAD))
        );
        assert_eq!(decode_key(&encode_key("orders", 7, 3)[..5]), None);
    }
}
