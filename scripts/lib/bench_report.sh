# SPDX-License-Identifier: MIT
# Rows of scripts/bench.sh and what is made of them: the printed table, bench/results.json
# and a PNG plot. Sourced; expects ROWS (a TSV file) and WORK set.
#
# A row: group, name, value ("n/a" when not measured), unit, baseline (the name of the row in
# the same group it is compared with; empty for a baseline itself), detail, and what bounded
# it: "sender" when the sender, not the program measured, was the bottleneck (the value is
# then only a lower bound, and neither it nor a row compared with it gets a ratio).

add_row() {  # group name value unit baseline detail [bound]
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" "$5" "$6" "${7:-}" >>"$ROWS"
}

# The rows with an eighth column: value / the baseline's value; "-" when there is no
# baseline, "sender-bound" when this row or its baseline measured its sender.
rows_with_ratios() {
  awk -F'\t' -v OFS='\t' '
    { line[NR] = $0; group[NR] = $1; name[NR] = $2; value[NR] = $3; base[NR] = $5
      bound[NR] = $7; key = $1 SUBSEP $2; values[key] = $3; bounds[key] = $7 }
    END {
      for (i = 1; i <= NR; i++) {
        ratio = "-"
        if (base[i] == "" && value[i] != "n/a") ratio = "1.00"
        b = values[group[i] SUBSEP base[i]]
        if (base[i] != "" && value[i] != "n/a" && b != "" && b != "n/a" && b + 0 > 0)
          ratio = sprintf("%.2f", value[i] / b)
        if (bound[i] == "sender" || (base[i] != "" && bounds[group[i] SUBSEP base[i]] == "sender"))
          ratio = "sender-bound"
        print line[i], ratio
      }
    }' "$ROWS"
}

print_table() {
  rows_with_ratios | awk -F'\t' '
    BEGIN { printf "%-20s %-44s %12s %-12s %11s  %s\n", "group", "row", "value", "unit", "x baseline", "detail"
            printf "%-20s %-44s %12s %-12s %11s  %s\n", "-----", "---", "-----", "----", "----------", "------" }
    { printf "%-20s %-44s %12s %-12s %11s  %s\n", $1, $2, $3, $4, $8, $6 }'
}

write_json() {  # output meta-json
  rows_with_ratios | jq -R -s --argjson meta "$2" '
    {meta: $meta,
     rows: (split("\n") | map(select(length > 0) | split("\t") |
       {group: .[0], name: .[1],
        value: (if .[2] == "n/a" then null else (.[2] | tonumber) end),
        unit: .[3], baseline: (if .[4] == "" then null else .[4] end), detail: .[5],
        bound_by: (if .[6] == "" then null else .[6] end),
        ratio: (if .[7] == "-" or .[7] == "sender-bound" then null else (.[7] | tonumber) end)}))}' >"$1"
}

# One panel per group: each row's ratio to its group's baseline.
write_plot() {  # output.png
  local groups group data unit i=0 plots=()
  mapfile -t groups < <(cut -f1 "$ROWS" | awk '!seen[$0]++')
  for group in "${groups[@]}"; do
    data=$WORK/plot-$i.dat
    rows_with_ratios | awk -F'\t' -v OFS='\t' -v g="$group" '$1 == g && $8 ~ /^[0-9.]+$/ { print $2, $8 }' >"$data"
    unit=$(awk -F'\t' -v g="$group" '$1 == g { print $4; exit }' "$ROWS")
    if [[ -s $data ]]; then
      plots+=("set title '$group: $unit, as a ratio to the baseline'; plot '$data' using 2:xtic(1) with boxes notitle")
    fi
    i=$((i + 1))
  done
  ((${#plots[@]} > 0)) || return 0
  {
    echo "set terminal pngcairo size 1200,$((330 * ${#plots[@]})) font ',9'"
    echo "set output '$1'"
    echo "set datafile separator '\t'"
    echo "set style fill solid 0.6; set boxwidth 0.7; set yrange [0:*]; set grid ytics"
    echo "set xtics rotate by -25 noenhanced; set title noenhanced"
    echo "set multiplot layout ${#plots[@]},1"
    printf '%s\n' "${plots[@]}"
    echo "unset multiplot"
  } | gnuplot
}
