//! `strait import`: the `mm2.properties` that says what MM2's connector configs or a Strimzi
//! KafkaMirrorMaker2 resource say, printed so that it can be read and kept.

use anyhow::Context;
use strait_config::Imported;

use super::ConfigArgs;

/// Options of `strait import`.
#[derive(Debug, clap::Args)]
pub struct ImportArgs {
    #[command(flatten)]
    config: ConfigArgs,
}

/// `strait import`: prints the `mm2.properties` text every other command reads for these
/// files, each setting after a comment naming where it came from. Secrets stay placeholders;
/// one written as it is in a connector config is printed as `[hidden]`.
///
/// The text is printed even when it does not pass `check-config` here (a Strimzi resource's
/// secrets are usually mounted only in the pod): why is logged as a warning.
pub fn import(args: ImportArgs) -> anyhow::Result<()> {
    let imported = Imported::from_paths(&args.config.config, &args.config.options())
        .with_context(|| format!("reading {}", args.config.names()))?;
    print!("{}", imported.shown_text());
    if let Err(error) = imported.config() {
        tracing::warn!("the printed configuration does not pass check-config on this machine: {error}");
    }
    Ok(())
}
