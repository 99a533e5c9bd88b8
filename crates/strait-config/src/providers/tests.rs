use std::path::PathBuf;

use super::*;
use crate::client::ClientRole;
use crate::mm2::Mm2Config;

const TWO: &str = "clusters = A, B\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n";
const FILE: &str = "org.apache.kafka.common.config.provider.FileConfigProvider";
const DIRECTORY: &str = "org.apache.kafka.common.config.provider.DirectoryConfigProvider";
const ENV: &str = "org.apache.kafka.common.config.provider.EnvVarConfigProvider";

/// A fresh folder under the system's temporary folder.
fn folder(name: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("strait-providers-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&path);
    std::fs::create_dir_all(&path).unwrap();
    path
}

fn parse(extra: &str) -> crate::error::Result<Mm2Config> {
    Mm2Config::parse(&format!("{TWO}{extra}"))
}

#[test]
fn placeholders_are_read_as_kafkas_config_transformer_reads_them() {
    let found: Vec<_> = placeholders("a ${file:/x/y.properties:k:with:colons} b ${env:HOME} ${nocolon} ${dir:/d:p")
        .into_iter()
        .map(|(_, _, p)| p)
        .collect();
    assert_eq!(
        found,
        [
            Placeholder {
                alias: "file",
                path: Some("/x/y.properties"),
                key: "k:with:colons"
            },
            Placeholder {
                alias: "env",
                path: None,
                key: "HOME"
            },
        ]
    );
}

#[test]
fn strimzis_three_aliases_resolve_passwords_and_servers_and_nothing_prints_them() {
    let dir = folder("strimzi");
    std::fs::write(dir.join("password"), "s3cr3t-from-dir").unwrap();
    std::fs::write(dir.join("servers.properties"), "bootstrap = a1:9092,a2:9092\n").unwrap();
    let variable = format!("STRAIT_TEST_USER_{}", std::process::id());
    std::env::set_var(&variable, "mirror-user");
    let config = parse(&format!(
        "config.providers = strimzienv, strimzifile, strimzidir\n\
         config.providers.strimzienv.class = {ENV}\n\
         config.providers.strimzienv.param.allowlist.pattern = STRAIT_TEST_.*\n\
         config.providers.strimzifile.class = {FILE}\n\
         config.providers.strimzidir.class = {DIRECTORY}\n\
         config.providers.strimzidir.param.allowed.paths = {dir}\n\
         A.bootstrap.servers = ${{strimzifile:{dir}/servers.properties:bootstrap}}\n\
         A.security.protocol = SASL_SSL\n\
         A.sasl.mechanism = SCRAM-SHA-512\n\
         A.sasl.jaas.config = org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"${{strimzienv:{variable}}}\" password=\"${{strimzidir:{dir}:password}}\";\n",
        dir = dir.display()
    ))
    .unwrap();
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(
        flow.source.get(ClientRole::Consumer, "bootstrap.servers"),
        Some("a1:9092,a2:9092")
    );
    let jaas = flow.source.get(ClientRole::Consumer, "sasl.jaas.config").unwrap();
    assert!(
        jaas.contains("username=\"mirror-user\" password=\"s3cr3t-from-dir\";"),
        "{jaas}"
    );
    let text = config.to_string();
    let json = config.to_json().to_string();
    for shown in [&text, &json, &format!("{config:?}")] {
        assert!(!shown.contains("s3cr3t"), "a resolved secret is printed: {shown}");
    }
    assert!(
        text.contains(&format!(
            "bootstrap.servers = ${{strimzifile:{}/servers.properties:bootstrap}}",
            dir.display()
        )),
        "a resolved value is shown as written: {text}"
    );
    assert!(text.contains("through a config provider"), "{text}");
    assert!(json.contains("\"config_provider\":true"), "{json}");
    assert!(config.ignored().iter().all(|i| !i.key.starts_with("config.providers")));
}

#[test]
fn what_resolves_to_nothing_is_an_error_naming_the_key_and_the_placeholder() {
    let dir = folder("missing");
    std::fs::write(dir.join("secrets.properties"), "other = x\n").unwrap();
    let providers = format!(
        "config.providers = file, dir, env\n\
         config.providers.file.class = {FILE}\n\
         config.providers.dir.class = {DIRECTORY}\n\
         config.providers.dir.param.allowed.paths = {}\n\
         config.providers.env.class = {ENV}\n\
         config.providers.env.param.allowlist.pattern = ALLOWED_.*\n",
        dir.display()
    );
    let error = |line: &str| parse(&format!("{providers}{line}\n")).unwrap_err().to_string();
    let d = dir.display();
    assert_eq!(
        error(&format!("A.bootstrap.servers = ${{file:{d}/secrets.properties:bootstrap}}")),
        format!(
            "line 10: `A.bootstrap.servers`: the config provider placeholder `${{file:{d}/secrets.properties:bootstrap}}` \
             resolves to nothing: `{d}/secrets.properties` has no key `bootstrap`"
        )
    );
    assert!(
        error(&format!("A.bootstrap.servers = ${{file:{d}/nothing.properties:k}}"))
            .contains(&format!("cannot read `{d}/nothing.properties`"))
    );
    assert!(error(&format!("A.ssl.key.password = ${{dir:{d}:password}}"))
        .ends_with(&format!("`{d}` holds no file `password`")));
    assert!(
        error("A.ssl.key.password = ${dir:/etc:passwd}").contains("is outside the provider's `param.allowed.paths`")
    );
    assert!(error(&format!("A.ssl.key.password = ${{dir:{d}/../..:etc}}")).contains("outside"));
    assert!(
        error("A.ssl.key.password = ${env:HOME}").contains("not allowed by the provider's `param.allowlist.pattern`")
    );
    assert!(error("A.ssl.key.password = ${env:ALLOWED_BUT_UNSET_7781}")
        .ends_with("environment variable `ALLOWED_BUT_UNSET_7781` is not set"));
}

#[test]
fn a_malformed_resolved_value_is_reported_as_written() {
    let dir = folder("malformed");
    std::fs::write(dir.join("p.properties"), "servers = not a host list s3cr3t\n").unwrap();
    let error = parse(&format!(
        "config.providers = file\nconfig.providers.file.class = {FILE}\n\
         A.bootstrap.servers = ${{file:{}/p.properties:servers}}\n",
        dir.display()
    ))
    .unwrap_err()
    .to_string();
    assert!(!error.contains("s3cr3t"), "{error}");
    assert!(error.contains("${file:"), "{error}");
}

#[test]
fn provider_classes_strait_cannot_run_are_refused_where_used_and_stray_provider_keys_always() {
    let error = |extra: &str| {
        parse(&format!("A.bootstrap.servers = a:9092\n{extra}"))
            .unwrap_err()
            .to_string()
    };
    const SECRETS: &str = "config.providers = secrets\n\
         config.providers.secrets.class = io.strimzi.kafka.KubernetesSecretConfigProvider\n";
    // Declared and used: the value that uses it is named, with why Strait cannot run it.
    let kubernetes = error(&format!("{SECRETS}A.sasl.jaas.config = ${{secrets:ns/mm2:jaas}}\n"));
    assert!(
        kubernetes.contains("A.sasl.jaas.config")
            && kubernetes.contains("${secrets:ns/mm2:jaas}")
            && kubernetes.contains("`io.strimzi.kafka.KubernetesSecretConfigProvider` cannot run in Strait")
            && kubernetes.contains("Kubernetes API"),
        "{kubernetes}"
    );
    assert!(error(
        "config.providers = vault\nconfig.providers.vault.class = com.example.Vault\nA.ssl.key.password = ${vault:k}\n"
    )
    .contains("Strait runs Kafka's three config providers"));
    // Declared and unused (Strimzi users often declare it for other connectors): a warning.
    let config = parse(&format!(
        "A.bootstrap.servers = a:9092\n{SECRETS}config.providers.secrets.param.namespace = ns\n"
    ))
    .unwrap();
    assert_eq!(config.warnings().len(), 1, "{:?}", config.warnings());
    assert!(
        config.warnings()[0].contains("config provider `secrets` is declared but no value uses it")
            && config.warnings()[0].contains("Kubernetes API"),
        "{:?}",
        config.warnings()
    );
    assert!(error("config.providers = file\n").contains("provider `file` has no class"));
    assert!(error(&format!("config.providers.file.class = {FILE}\n")).contains("not a provider setting"));
    assert!(error(&format!(
        "config.providers = file\nconfig.providers.file.class = {FILE}\nconfig.providers.file.params.x = 1\n"
    ))
    .contains("not a provider setting"));
}

#[test]
fn placeholders_of_unconfigured_aliases_stay_as_written_with_a_warning() {
    let config = parse("A.bootstrap.servers = a:9092\nA.ssl.key.password = ${vault:x}\n").unwrap();
    let flow = config.flow("A", "B").unwrap();
    assert_eq!(
        flow.source.get(ClientRole::Consumer, "ssl.key.password"),
        Some("${vault:x}")
    );
    assert!(config.warnings()[0].contains("`vault` is not in `config.providers`"));
}

#[test]
fn parameters_a_provider_does_not_take_are_named_in_a_warning() {
    let config = parse(&format!(
        "A.bootstrap.servers = a:9092
         config.providers = file, env
         config.providers.file.class = {FILE}
         config.providers.file.param.allowed.paths = /etc
         config.providers.file.param.allowlist.pattern = X
         config.providers.env.class = {ENV}
         config.providers.env.param.allowlist.pattern = X
         config.providers.env.param.cache.ttl.ms = 5
"
    ))
    .unwrap();
    let ignored: Vec<&String> = config.warnings().iter().filter(|w| w.contains("is ignored")).collect();
    assert_eq!(ignored.len(), 2, "{:?}", config.warnings());
    assert!(
        ignored[0].contains("`config.providers.file.param.allowlist.pattern`"),
        "{ignored:?}"
    );
    assert!(
        ignored[1].contains("`config.providers.env.param.cache.ttl.ms`"),
        "{ignored:?}"
    );
}
