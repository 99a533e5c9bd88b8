//! The Kafka jars, fetched once with Maven into a cache folder.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

use crate::{Error, Result};

/// The Maven project that pins the Kafka version (the one place it is pinned).
const POM: &str = include_str!("../../../kafka/pom.xml");

/// log4j2 configuration for command-line tools: warnings and errors to stderr only.
const TOOLS_LOG4J2: &str = r#"<Configuration status="WARN">
  <Appenders><Console name="E" target="SYSTEM_ERR"><PatternLayout pattern="%p %m (%c)%n"/></Console></Appenders>
  <Loggers><Root level="WARN"><AppenderRef ref="E"/></Root></Loggers>
</Configuration>
"#;

/// `bin/kafka-run-class.sh`'s default `KAFKA_JVM_PERFORMANCE_OPTS` (G1), with which Kafka's
/// scripts start brokers and MirrorMaker 2.
pub const KAFKA_JVM_PERFORMANCE_OPTIONS: &[&str] = &[
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
];

/// The JVM options `bin/connect-mirror-maker.sh` runs MirrorMaker 2 with: its
/// `KAFKA_HEAP_OPTS` (`-Xms256M -Xmx2G`), then `bin/kafka-run-class.sh`'s default
/// `KAFKA_JVM_PERFORMANCE_OPTS` (G1) and `KAFKA_JMX_OPTS` (local JMX, no port), in the script's
/// order.
pub const MIRROR_MAKER_JVM_OPTIONS: &[&str] = &[
    "-Xms256M",
    "-Xmx2G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
    "-Djava.awt.headless=true",
    "-Dcom.sun.management.jmxremote",
    "-Dcom.sun.management.jmxremote.authenticate=false",
    "-Dcom.sun.management.jmxremote.ssl=false",
];

/// The Kafka version pinned in `kafka/pom.xml`.
pub fn kafka_version() -> &'static str {
    let start = POM.find("<kafka.version>").expect("kafka/pom.xml pins <kafka.version>") + 15;
    let end = start + POM[start..].find('<').expect("<kafka.version> is closed");
    &POM[start..end]
}

/// A local copy of the Kafka jars (broker, tools, MirrorMaker 2, a log4j2 binding).
#[derive(Debug)]
pub struct KafkaDist {
    home: PathBuf,
}

impl KafkaDist {
    /// The shared copy, fetched with `mvn` into the cache on first use.
    ///
    /// The cache folder is `$STRAIT_CACHE_DIR`, else `$XDG_CACHE_HOME/strait`, else
    /// `~/.cache/strait`; inside it, one folder per content of `kafka/pom.xml`.
    pub fn get() -> Result<&'static KafkaDist> {
        static DIST: Mutex<Option<&'static KafkaDist>> = Mutex::new(None);
        let mut slot = DIST.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(dist) = *slot {
            return Ok(dist);
        }
        let dist: &'static KafkaDist = Box::leak(Box::new(Self::fetch(&cache_root())?));
        *slot = Some(dist);
        Ok(dist)
    }

    /// Fetches the jars into `root` unless a complete copy is already there.
    fn fetch(root: &Path) -> Result<KafkaDist> {
        let home = root.join(format!("kafka-{}-{:016x}", kafka_version(), fnv1a(POM)));
        let dist = KafkaDist { home };
        if dist.libs().join(".complete").exists() {
            return Ok(dist);
        }
        let staging = copy_dependencies(&dist.home, POM, &format!("Kafka {}", kafka_version()))?;
        write(&staging.join("log4j2-tools.xml"), TOOLS_LOG4J2)?;
        for name in ["libs", "log4j2-tools.xml"] {
            // Losing the race to another process is fine: its copy is complete too.
            let _ = std::fs::rename(staging.join(name), dist.home.join(name));
        }
        let _ = std::fs::remove_dir_all(&staging);
        Ok(dist)
    }

    /// The folder holding every jar.
    pub fn libs(&self) -> PathBuf {
        self.home.join("libs")
    }

    /// A `java` command with the Kafka class path, a small heap and quiet logging, ready to run
    /// `main_class` (for example `org.apache.kafka.tools.ProducerPerformance`).
    pub fn java(&self, main_class: &str) -> Command {
        // Tools are short-lived: start fast rather than optimise hard.
        self.jvm(
            "512m",
            &self.home.join("log4j2-tools.xml"),
            &["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1"],
            main_class,
        )
    }

    /// A `java` command for a long-running program (MirrorMaker 2, for example): `heap` (e.g.
    /// `1g`), full JIT, quiet logging.
    pub fn jvm_command(&self, heap: &str, main_class: &str) -> Command {
        self.jvm(
            heap,
            &self.home.join("log4j2-tools.xml"),
            &["-XX:+UseSerialGC"],
            main_class,
        )
    }

    /// A `java` command with exactly `jvm_options` (heap, garbage collector and the like: none
    /// are added), quiet logging and the Kafka class path, ready to run `main_class`.
    pub fn java_with_options(&self, jvm_options: &[&str], main_class: &str) -> Command {
        let mut command = Command::new("java");
        command
            .args(jvm_options)
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.home.join("log4j2-tools.xml").display()
            ))
            .arg("-cp")
            .arg(self.classpath())
            .arg(main_class);
        command
    }

    /// MirrorMaker 2 in dedicated mode as Kafka's `bin/connect-mirror-maker.sh` starts it: the
    /// JVM options of [`MIRROR_MAKER_JVM_OPTIONS`] and `org.apache.kafka.connect.mirror.MirrorMaker`.
    /// Logging is quiet (warnings to stderr) where the script logs at INFO. The caller adds the
    /// `mm2.properties` path.
    pub fn mirror_maker(&self) -> Command {
        self.java_with_options(MIRROR_MAKER_JVM_OPTIONS, "org.apache.kafka.connect.mirror.MirrorMaker")
    }

    /// A `java` command with the given heap, log4j2 configuration and JVM options (the garbage
    /// collector among them); the caller adds `main_class`'s arguments.
    pub(crate) fn jvm(&self, heap: &str, log4j2: &Path, options: &[&str], main_class: &str) -> Command {
        let mut command = Command::new("java");
        command
            .arg(format!("-Xms{heap}"))
            .arg(format!("-Xmx{heap}"))
            .arg(format!("-Dlog4j2.configurationFile={}", log4j2.display()))
            .args(options)
            .arg("-cp")
            .arg(self.classpath())
            .arg(main_class);
        command
    }

    /// Compiles Java `sources` against the Kafka jars into `classes`.
    pub fn javac(&self, sources: &[PathBuf], classes: &Path) -> Result<()> {
        create_dir(classes)?;
        let output = Command::new("javac")
            .arg("-cp")
            .arg(self.classpath())
            .arg("-d")
            .arg(classes)
            .args(sources)
            .output()
            .map_err(|source| Error::Spawn {
                program: "javac".into(),
                source,
            })?;
        if output.status.success() {
            Ok(())
        } else {
            Err(Error::Spawn {
                program: "javac".into(),
                source: std::io::Error::other(String::from_utf8_lossy(&output.stderr).into_owned()),
            })
        }
    }

    /// A `java` command running `main_class` from `classes` (see [`javac`](Self::javac)) with the
    /// Kafka jars on the class path.
    pub fn java_program(&self, classes: &Path, main_class: &str) -> Command {
        let mut command = Command::new("java");
        command
            .arg("-Xmx256m")
            .arg("-XX:TieredStopAtLevel=1")
            .arg(format!(
                "-Dlog4j2.configurationFile={}",
                self.home.join("log4j2-tools.xml").display()
            ))
            .arg("-cp")
            .arg(format!("{}:{}", classes.display(), self.classpath()))
            .arg(main_class);
        command
    }

    /// The Java class path covering every jar.
    pub fn classpath(&self) -> String {
        format!("{}/*", self.libs().display())
    }
}

/// Fetches the runtime dependencies of `pom` with `mvn` into `<staging>/libs` (marked complete)
/// and returns the staging folder, a private folder under `home` that the caller renames into
/// place: concurrent processes never see a half-filled folder. `what` names the jars in errors.
fn copy_dependencies(home: &Path, pom: &str, what: &str) -> Result<PathBuf> {
    let staging = home.join(format!("staging-{}", std::process::id()));
    create_dir(&staging)?;
    write(&staging.join("pom.xml"), pom)?;
    let libs = staging.join("libs");
    let output = Command::new("mvn")
        .args(["-B", "-q", "-f"])
        .arg(staging.join("pom.xml"))
        .arg("dependency:copy-dependencies")
        .arg(format!("-DoutputDirectory={}", libs.display()))
        .arg("-DincludeScope=runtime")
        .output()
        .map_err(|source| Error::Spawn {
            program: "mvn".into(),
            source,
        })?;
    if !output.status.success() {
        return Err(Error::Fetch {
            what: what.into(),
            status: output.status.to_string(),
            output: String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into(),
        });
    }
    write(&libs.join(".complete"), "")?;
    Ok(staging)
}

/// The jars of another Maven project than Kafka's (a reference library that a test runs, such
/// as AWS's `aws-msk-iam-auth`): the runtime dependencies of `pom`, fetched with `mvn` on
/// first use into `<cache>/<name>-<hash of pom>/libs`, the folder returned.
pub fn maven_jars(name: &str, pom: &str) -> Result<PathBuf> {
    let home = cache_root().join(format!("{name}-{:016x}", fnv1a(pom)));
    let libs = home.join("libs");
    if !libs.join(".complete").exists() {
        let staging = copy_dependencies(&home, pom, name)?;
        let _ = std::fs::rename(staging.join("libs"), &libs);
        let _ = std::fs::remove_dir_all(&staging);
    }
    Ok(libs)
}

fn cache_root() -> PathBuf {
    if let Some(dir) = std::env::var_os("STRAIT_CACHE_DIR") {
        return PathBuf::from(dir);
    }
    if let Some(dir) = std::env::var_os("XDG_CACHE_HOME") {
        return PathBuf::from(dir).join("strait");
    }
    let home = std::env::var_os("HOME")
        .map(PathBuf::from)
        .unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("strait")
}

/// A stable hash of the pom, so that a changed pin gets a fresh cache folder.
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

pub(crate) fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|source| Error::Io {
        what: "creating folder",
        path: path.into(),
        source,
    })
}

pub(crate) fn write(path: &Path, contents: &str) -> Result<()> {
    std::fs::write(path, contents).map_err(|source| Error::Io {
        what: "writing",
        path: path.into(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_read_from_the_pom() {
        let version = kafka_version();
        assert!(version.starts_with("4."), "Kafka 4.x is pinned, got {version}");
    }
}
