#!/bin/sh
# SPDX-License-Identifier: MIT
# Writes floodgate(1) from the CLI's own help: `floodgate --help` and every subcommand's,
# walked recursively, so the man page says what the binary says and cannot drift from it.
# usage: manpage.sh FLOODGATE_BINARY CONFIG_FILE OUTPUT
set -eu
bin=$1 config_file=$2 output=$3

# Subcommand names listed under "Subcommands:" in a CLI11 help text on stdin.
subcommands() {
  awk '/^Subcommands:/ { in_list = 1; next }
       in_list && /^[^ ]/ { in_list = 0 }
       in_list && /^  [a-z]/ { print $1 }'
}

# Text on stdin made safe for roff: backslashes, minus signs (so options copy as ASCII),
# and lines that start with a dot or quote, which roff would take for requests.
roff_escape() {
  sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\([.']\)/\\\\\&\1/"
}

# One .SS section per command: its summary line, then the rest of its help verbatim.
command_section() {
  help=$("$bin" "$@" --help)
  printf '.SS "floodgate %s"\n' "$*"
  printf '%s\n' "$help" | sed -n 1p | roff_escape
  printf '.PP\n.nf\n'
  printf '%s\n' "$help" | sed 1d | roff_escape
  printf '.fi\n'
  for sub in $(printf '%s\n' "$help" | subcommands); do
    command_section "$@" "$sub"
  done
}

version=$("$bin" --version)
top=$("$bin" --help)
summary=$(printf '%s\n' "$top" | sed -n '1s/^floodgate: //p')

tmp="$output.tmp"
{
  printf '.TH FLOODGATE 1 "" "floodgate %s" "User Commands"\n' "$version"
  printf '.nh\n'
  printf '.SH NAME\nfloodgate \\- %s\n' "$(printf '%s\n' "$summary" | roff_escape)"
  printf '.SH SYNOPSIS\n.B floodgate\n.RI [ OPTIONS ] " COMMAND " [ ARGS ]\n'
  printf '.SH DESCRIPTION\n'
  printf 'floodgate attaches an XDP program that rate-limits traffic at the NIC, loads its rules\n'
  printf 'from one YAML config, changes them live, bans addresses and exports counters.\n'
  printf 'Every command prints the help below with \\fB\\-\\-help\\fR.\n'
  printf '.SH OPTIONS\n.nf\n'
  printf '%s\n' "$top" | awk '/^Options:/ { on = 1; next } on && /^$/ { exit } on' | roff_escape
  printf '.fi\n.SH COMMANDS\n'
  for sub in $(printf '%s\n' "$top" | subcommands); do
    command_section "$sub"
  done
  printf '.SH EXIT STATUS\n'
  printf '0 on success; 1 when a command fails, including a config error, reported as\n'
  printf '\\fIfile\\fR:\\fIline\\fR:\\fIcolumn\\fR: \\fImessage\\fR; 2 on a usage error.\n'
  printf '.SH FILES\n.TP\n.I %s\n' "$(printf '%s\n' "$config_file" | roff_escape)"
  printf 'The config that the systemd unit \\fBfloodgate.service\\fR runs \\fBfloodgate run\\fR with.\n'
  printf '.TP\n.I share/floodgate/\n'
  printf 'Under the installation prefix: the commented default \\fBfloodgate.yaml\\fR and\n'
  printf '\\fBexamples/\\fR.\n'
  printf '.TP\n.I /sys/fs/bpf/floodgate/\\fIinterface\\fP/\n'
  printf 'The pinned maps of the limiter attached to \\fIinterface\\fR.\n'
  printf '.SH SEE ALSO\n.BR systemctl (1),\n.BR systemd-analyze (1);\n'
  printf 'README.md and docs/ in share/doc/floodgate under the installation prefix.\n'
} >"$tmp"
mv "$tmp" "$output"
