//! A fake Android SDK home for tests of code that starts emulators: `emulator/emulator` is a
//! shell script that lists the AVDs it was made with (`-list-avds`) and, for `-avd NAME …`,
//! execs the `fake-android` binary in its place, which registers with the adb server the way
//! an emulator appears to adb; `platform-tools/adb` is the real adb.

use std::path::Path;

use anyhow::Context as _;

use super::adb_server::adb_binary;
use super::shell_words::quote;

/// Writes `emulator/emulator`, `platform-tools/adb` (a symlink to the real adb) and one
/// `avd/NAME.ini` per AVD under `dir`. The script hands the device to the adb server named by
/// `ANDROID_ADB_SERVER_PORT`, or by a `tcp:HOST:PORT` in `ADB_SERVER_SOCKET`, else port 5037,
/// as the emulator does.
pub fn fake_android_home(dir: &Path, fake_android_bin: &Path, avds: &[&str]) -> anyhow::Result<()> {
    let emulator_dir = dir.join("emulator");
    let tools_dir = dir.join("platform-tools");
    let avd_dir = dir.join("avd");
    for created in [&emulator_dir, &tools_dir, &avd_dir] {
        std::fs::create_dir_all(created)
            .with_context(|| format!("creating `{}`", created.display()))?;
    }
    let adb = adb_binary()?;
    let adb_link = tools_dir.join("adb");
    if std::fs::symlink_metadata(&adb_link).is_ok() {
        std::fs::remove_file(&adb_link)?;
    }
    std::os::unix::fs::symlink(&adb, &adb_link)
        .with_context(|| format!("linking `{}`", adb_link.display()))?;
    for avd in avds {
        std::fs::write(
            avd_dir.join(format!("{avd}.ini")),
            format!(
                "avd.ini.encoding=UTF-8\npath={}\npath.rel=avd/{avd}.avd\ntarget=android-30\n",
                avd_dir.join(format!("{avd}.avd")).display()
            ),
        )?;
    }
    let listed = avds
        .iter()
        .map(|avd| quote(avd))
        .collect::<Vec<_>>()
        .join(" ");
    let bin = quote(&fake_android_bin.display().to_string());
    let adb_path = quote(&adb_link.display().to_string());
    let script = format!(
        r#"#!/bin/sh
# A stand-in for the Android emulator, written by paddock-testkit: `-list-avds` prints the AVDs
# this SDK home was made with; `-avd NAME ...` (or `@NAME`) runs a fake Android 11 device that
# registers with the adb server, as the emulator does.
avd=
while [ $# -gt 0 ]; do
  case "$1" in
    -list-avds) for name in {listed}; do printf '%s\n' "$name"; done; exit 0 ;;
    -avd) avd=$2; shift ;;
    @*) avd=${{1#@}} ;;
  esac
  shift
done
if [ -z "$avd" ]; then
  echo "ERROR   | No AVD specified. Use '@foo' or '-avd foo' to launch a virtual device named 'foo'" >&2
  exit 1
fi
known=
for name in {listed}; do [ "$name" = "$avd" ] && known=1; done
if [ -z "$known" ]; then
  echo "PANIC: Unknown AVD name [$avd], use -list-avds to see valid list." >&2
  exit 1
fi
port=${{ANDROID_ADB_SERVER_PORT:-}}
if [ -z "$port" ]; then
  case "${{ADB_SERVER_SOCKET:-}}" in
    tcp:*) port=${{ADB_SERVER_SOCKET##*:}} ;;
  esac
fi
exec {bin} --avd "$avd" --adb {adb_path} --adb-port "${{port:-5037}}"
"#
    );
    let script_path = emulator_dir.join("emulator");
    paddock_process::write_executable(&script_path, script.as_bytes())?;
    Ok(())
}
