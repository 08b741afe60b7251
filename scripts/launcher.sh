#!/bin/sh
# checkpoint-surgeon's launcher, written into bin/ by `gradle installDist` from scripts/launcher.sh
# (@JVM_OPTS@ and @CLASSPATH@ are filled in). It runs the CLI on the java of JAVA_HOME, else of the
# PATH, with:
# - the class-data archive in lib/cds, when the same JVM build made it (CHECKPOINT_SURGEON_CDS=<class
#   list> makes it; cdsArchive does at install time), mapped at the address it was dumped for when that
#   JVM takes the flag (lib/cds/opts): Java 17 relocates it to a random address by default, ~8 ms of
#   CPU per run. The archive holds class metadata, no code; the JVM still relocates it if the address
#   is taken;
# - the native library from lib/native/<platform>/ instead of extracting it from the jar;
# - JAVA_OPTS and CHECKPOINT_SURGEON_OPTS, split at blanks.
# Only shell builtins on the common path, apart from java and one readlink: Gradle's own start script
# started ~20 processes (sed per argument, uname, cat, ...), ~20 ms of every run.

prg=$0
while [ -h "$prg" ]; do
    link=$(readlink "$prg")
    case $link in
        /*) prg=$link ;;
        *) prg=${prg%/*}/$link ;;
    esac
done
case $prg in
    */*) APP_HOME=${prg%/*}/.. ;;
    *) APP_HOME=.. ;;
esac

if [ -n "$JAVA_HOME" ]; then
    JAVACMD=$JAVA_HOME/bin/java
    if [ ! -x "$JAVACMD" ]; then
        echo "ERROR: JAVA_HOME is set to an invalid directory: $JAVA_HOME" >&2
        exit 1
    fi
else
    JAVACMD=$(command -v java) || {
        echo "ERROR: JAVA_HOME is not set and no 'java' command could be found in your PATH." >&2
        exit 1
    }
fi

# Checkpoints with many state files: as many open files as the hard limit allows.
max_fd=$(ulimit -H -n) && ulimit -n "$max_fd" 2>/dev/null

set -f # the options below are split at blanks, never expanded as file names
set -- $JAVA_OPTS $CHECKPOINT_SURGEON_OPTS -classpath "@CLASSPATH@" io.checkpointsurgeon.cli.Cli "$@"
set +f

# The JVM an archive belongs to: the java binary (links resolved) and its release file.
CDS_DIR=$APP_HOME/lib/cds
java_bin=$(readlink -f "$JAVACMD")
jvm_id=$java_bin
if [ -r "${java_bin%/bin/java}/release" ]; then
    while IFS= read -r line || [ -n "$line" ]; do
        jvm_id="$jvm_id
$line"
    done < "${java_bin%/bin/java}/release"
fi
if [ -n "${CHECKPOINT_SURGEON_CDS:-}" ]; then
    mkdir -p "$CDS_DIR" && "$JAVACMD" -Xshare:dump -XX:SharedClassListFile="$CHECKPOINT_SURGEON_CDS" \
        -XX:SharedArchiveFile="$CDS_DIR/checkpoint-surgeon.jsa" "$@" >/dev/null || exit 1
    printf '%s\n' "$jvm_id" > "$CDS_DIR/jvm"
    # ArchiveRelocationMode is a diagnostic flag of Java 14 and later: kept only if this JVM takes it
    : > "$CDS_DIR/opts"
    if "$JAVACMD" -XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0 -version >/dev/null 2>&1; then
        printf '%s\n' "-XX:+UnlockDiagnosticVMOptions -XX:ArchiveRelocationMode=0" > "$CDS_DIR/opts"
    fi
    exit 0
fi
if [ -f "$CDS_DIR/checkpoint-surgeon.jsa" ] && [ -r "$CDS_DIR/jvm" ]; then
    made_by=
    while IFS= read -r line; do
        made_by="${made_by:+$made_by
}$line"
    done < "$CDS_DIR/jvm"
    if [ "$made_by" = "$jvm_id" ]; then
        cds_opts=
        [ -r "$CDS_DIR/opts" ] && IFS= read -r cds_opts < "$CDS_DIR/opts"
        set -f
        set -- $cds_opts -XX:SharedArchiveFile="$CDS_DIR/checkpoint-surgeon.jsa" -Xshare:auto "$@"
        set +f
    fi
fi

exec "$JAVACMD" @JVM_OPTS@ -Dcheckpointsurgeon.libraryDir="$APP_HOME/lib/native" "$@"
