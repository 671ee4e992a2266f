#!/usr/bin/env bats
# ninfer-bench: its --json and --csv records parsed and checked for what
# does not depend on the machine — the columns (their names and order),
# shapes, encoded sizes (DESIGN 8), counts, min <= p10 <= median <= p90,
# rates consistent with the bytes and times, the ratio a fraction of the
# larger peak, the check against the reference — never for timings
# (DESIGN 12: benchmarks are commands, not timed tests). Generated weights
# and an artifact's own objects; exit statuses of DESIGN 3.
#
# The suite pretends to a 2 MiB last-level cache and an 8 MiB rotation
# buffer (helper.bash), and keeps shapes and --iters small.

load helper

# has_gpu — a CUDA build on a machine with a GPU (else --device cuda is 4).
has_gpu() {
    ! grep -qa 'rebuild where nvcc is installed' "$NF_BIN/ninfer-bench" &&
        command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1
}

CSV_HEADER="device,op,activation,format,layout,object,rows,cols,threads,bytes,iters,min_us,p10_us,med_us,p90_us,gbps,input_mbps,peak_before_gbps,peak_after_gbps,ratio,unstable,max_err,bound,check"

# jnum NAME — the value of NAME in the one JSON record in $output
jnum() {
    grep -o "\"$1\":[^,}]*" <<< "$output" | head -n1 | sed "s/^\"$1\"://; s/^\"//; s/\"\$//"
}

# check_row ROW DEVICE OP ACT FORMAT LAYOUT OBJECT ROWS COLS BYTES ITERS — one
# --csv data row (no quoted fields): the fixed fields, then the figures'
# consistency: times in order, gbps = bytes / p10 (gemv, decode) or
# input_mbps (encode), the ratio gbps over the larger peak, unstable 0 or 1,
# gemv checked ok within its bound, the others not checked.
check_row() {
    awk -F, -v want="$2,$3,$4,$5,$6,$7,$8,$9" -v bytes="${10}" -v iters="${11}" '
        { ok = NF == 24 && $1 "," $2 "," $3 "," $4 "," $5 "," $6 "," $7 "," $8 == want
          ok = ok && $9 >= 1 && $10 == bytes && $11 == iters
          ok = ok && $12 > 0 && $12 <= $13 && $13 <= $14 && $14 <= $15
          ok = ok && $18 > 0 && $19 > 0 && ($21 == 0 || $21 == 1)
          peak = $18 > $19 ? $18 : $19
          if ($2 == "encode") {
              ok = ok && $16 == "" && $20 == "" && ($17 - bytes / $13) ^ 2 <= (0.001 + 1e-3 * $17) ^ 2
          } else {
              ok = ok && $17 == "" && ($16 - bytes / $13 / 1e3) ^ 2 <= (0.001 + 1e-3 * $16) ^ 2
              ok = ok && ($20 - $16 / peak) ^ 2 <= (0.0001 + 2e-3 * $20) ^ 2
          }
          if ($2 == "gemv")
              ok = ok && $24 == "ok" && $22 != "" && $23 != "" && $22 + 0 <= $23 + 0
          else
              ok = ok && $24 == "-" && $22 == "" && $23 == ""
          exit !ok }' <<< "$1"
}

@test "--help prints the usage (exit 0), --version the version" {
    run -0 --separate-stderr ninfer-bench --help
    [ "${lines[0]}" = "usage: ninfer-bench --format F,... [--layout L] --shape NxK,... [OPTIONS]" ]
    [ "${lines[1]}" = "       ninfer-bench ARTIFACT [--param GLOB] [OPTIONS]" ]
    [ -z "$stderr" ]
    local l
    for l in "${lines[@]}"; do [ "${#l}" -le 80 ] || [[ "$l" == Formats:* ]]; done
    run -0 ninfer-bench --version
    [[ "$output" =~ ^ninfer-bench\ [0-9] ]]
}

@test "usage errors exit 2 before anything is measured" {
    run -2 --separate-stderr ninfer-bench
    [ -z "$output" ]
    [[ "$stderr" == "ninfer-bench: "*"(see 'ninfer-bench --help')" ]]
    run -2 ninfer-bench --shape 128x128
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 some.ninfer
    run -2 ninfer-bench a.ninfer b.ninfer
    run -2 ninfer-bench --format q3_nope --shape 128x128
    run -2 ninfer-bench --format q4_g64_fp16,q3_nope --shape 128x128
    run -2 ninfer-bench --format q4_g64_fp16 --layout nope --shape 128x128
    run -2 ninfer-bench --format q4_g64_fp16
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128,0x128
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --op matmul
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --device gpu
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --iters 0
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --threads 0
    run -2 ninfer-bench --format nvfp4 --shape 128x128 --divisors 0
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --rotate-bytes 0
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --device cuda --hot
    run -2 ninfer-bench --bogus
}

@test "--json: q4_g64_fp16 [4096,4096] gemv, one record, 8912896 encoded bytes (DESIGN 8), checked" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16 --shape 4096x4096 --iters 3 --warmup 1 --json
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 1 ]
    # the keys of the CSV header, in its order
    [ "$(grep -o '"[a-z_0-9]*":' <<< "$output" | tr -d '":' | tr '\n' ',')" = "$CSV_HEADER," ]
    [ "$(jnum device) $(jnum op) $(jnum activation) $(jnum format) $(jnum layout) $(jnum object)" = \
      "cpu gemv a16 q4_g64_fp16 row_split_k128_v1 null" ]
    # 4096 * 4096 / 2 code bytes + 4096 * (4096 / 64) * 2 scale bytes
    [ "$(jnum rows) $(jnum cols) $(jnum bytes) $(jnum iters) $(jnum check)" = "4096 4096 8912896 3 ok" ]
    [ "$(jnum input_mbps)" = null ]
    awk -v g="$(jnum gbps)" -v p10="$(jnum p10_us)" -v r="$(jnum ratio)" -v a="$(jnum peak_before_gbps)" \
        -v b="$(jnum peak_after_gbps)" -v e="$(jnum max_err)" -v bd="$(jnum bound)" 'BEGIN {
        pk = a > b ? a : b
        exit !((g - 8912896 / p10 / 1e3) ^ 2 <= (0.001 + 1e-3 * g) ^ 2 && (r - g / pk) ^ 2 <= (1e-4 + 2e-3 * r) ^ 2 &&
               e <= bd && r > 0 && r < 50) }'
}

@test "--json: decode (nvfp4 with 2 divisors) and encode (MB/s of f32 input, no ratio)" {
    run -0 --separate-stderr ninfer-bench --format nvfp4 --shape 256x256 --divisors 2 \
        --op decode --iters 3 --warmup 0 --threads 1 --json
    [ "${#lines[@]}" -eq 1 ]
    # codes 32768, scales 4096, two fp32 divisors
    [ "$(jnum op) $(jnum activation) $(jnum bytes) $(jnum threads) $(jnum check) $(jnum max_err) $(jnum input_mbps)" = \
      "decode null 36872 1 - null null" ]
    run -0 --separate-stderr ninfer-bench --format fp8_e4m3fn_row_bf16 --shape 128x256 \
        --op encode --iters 4 --json
    [ "${#lines[@]}" -eq 1 ]
    # the f32 input: 128 * 256 * 4 bytes
    [ "$(jnum op) $(jnum bytes) $(jnum iters) $(jnum gbps) $(jnum ratio) $(jnum check)" = "encode 131072 4 null null -" ]
    awk -v m="$(jnum input_mbps)" -v p10="$(jnum p10_us)" 'BEGIN { exit !(m > 0 && (m - 131072 / p10) ^ 2 <= (0.001 + 1e-3 * m) ^ 2) }'
}

# q2 [128,100]: K padded to 128, 2-bit codes 128*32 + fp16 scales 128*2*2;
# q5 [128,200]: Kp 256, 4-bit plane 128*128 + 1-bit plane 128*32 + scales
# 128*4*2; fp8 [256,200]: codes 51200 + bf16 row scales 512; bf16: 2 per element
@test "--csv: a header, then one row; sizes of every layout (DESIGN 8)" {
    local f shape bytes layout
    while read -r f layout shape bytes; do
        run -0 --separate-stderr ninfer-bench --format "$f" --shape "$shape" --iters 3 --warmup 1 --csv
        [ -z "$stderr" ]
        [ "${#lines[@]}" -eq 2 ]
        [ "${lines[0]}" = "$CSV_HEADER" ]
        check_row "${lines[1]}" cpu gemv a16 "$f" "$layout" "" "${shape%x*}" "${shape#*x}" "$bytes" 3
    done <<'EOF'
q2_g64_fp16 row_split_k128_v1 128x100 4608
q5_g64_fp16 row_split_k128_v1 128x200 21504
fp8_e4m3fn_row_bf16 row_scale_v1 256x200 51712
bf16 contiguous_le_v1 100x100 20000
EOF
}

@test "several formats and shapes in one run: every shape with every format, in order" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16,bf16 --format q8_g32_fp16 \
        --shape 128x256 --shape 256x128,64x64 --iters 2 --warmup 0 --csv
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 10 ]
    [ "$(printf '%s\n' "${lines[@]:1}" | cut -d, -f4,7,8 | tr '\n' ' ')" = \
      "q4_g64_fp16,128,256 bf16,128,256 q8_g32_fp16,128,256 q4_g64_fp16,256,128 bf16,256,128 q8_g32_fp16,256,128 q4_g64_fp16,64,64 bf16,64,64 q8_g32_fp16,64,64 " ]
    local r
    for r in "${lines[@]:1}"; do
        IFS=, read -r _ _ _ f l _ n k _ b _ <<< "$r"
        check_row "$r" cpu gemv a16 "$f" "$l" "" "$n" "$k" "$b" 2
    done
}

@test "text output: a line about the peak, a header with every column, one row a case" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16 --shape 256x256 --iters 3 --threads 1
    [ "${#lines[@]}" -eq 3 ]
    # 8 MiB rotation (helper.bash) below 4 x 2 MiB + 1 MiB: 9 MiB
    [ "${lines[0]}" = "# peak: CPU read-only passes over the 9 MiB rotation buffer (>= 4x the 2048 KiB last-level cache), 1 threads, just before and after each case" ]
    [ "$(tr -s ' ' <<< "${lines[1]}" | sed 's/ $//')" = "device op act format layout object rows cols thr bytes iters min_us p10_us med_us p90_us GB/s in_MB/s peak_b peak_a ratio unst max_err bound check" ]
    read -r dev op act fmt lay rows cols thr bytes iters rest <<< "${lines[2]}"
    [ "$dev $op $act $fmt $lay $rows $cols $thr $bytes $iters" = "cpu gemv a16 q4_g64_fp16 row_split_k128_v1 256 256 1 34816 3" ]
    [ "${lines[2]##* }" = ok ]
}

@test "--help lists every format; --format all runs each one that the shape fits" {
    run -0 ninfer-bench --help
    local formats f
    # the list, wrapped: "Formats:" and the indented lines after it
    formats=$(sed -n '/^Formats:/,$p' <<< "$output" | tr '\n' ' ')
    formats=${formats#Formats: }
    for f in bf16 fp32 int32 q2_g64_fp16 q4_g64_fp16 q5_g64_fp16 q6_g64_fp16 q8_g32_fp16 \
        t2_g128_fp16 nvfp4 fp8_e4m3fn_row_bf16; do
        [[ " $formats " == *" $f "* ]]
    done
    # every listed format: a row in the order of the list, or a note why it was skipped
    # (128x64: nvfp4 fits, N % 128 and K % 64; 100x64 it does not)
    local shape want got skipped
    for shape in 128x64 100x64; do
        run -0 --separate-stderr ninfer-bench --format all --shape "$shape" --iters 2 --warmup 0 --csv
        [ "${lines[0]}" = "$CSV_HEADER" ]
        got=$(printf '%s\n' "${lines[@]:1}" | cut -d, -f4 | tr '\n' ' ')
        skipped=$(sed -n 's/^ninfer-bench: \([a-z0-9_]*\): skipped: .*/\1/p' <<< "$stderr" | tr '\n' ' ')
        [ "$(grep -vc ': skipped: ' <<< "$stderr")" -eq 0 ] || [ -z "$stderr" ]
        want=""
        for f in $formats; do
            [[ " $skipped " == *" $f "* ]] || want="$want$f "
        done
        [ "$got" = "$want" ]
        [[ " $got " == *" q4_g64_fp16 "* && " $got " == *" fp8_e4m3fn_row_bf16 "* ]]
        if [ "$shape" = 128x64 ]; then
            [[ " $got " == *" nvfp4 "* ]]
        else
            [[ "$stderr" == *"ninfer-bench: nvfp4: skipped: "*"N % 128"* ]]
        fi
        # every gemv row checked against the reference
        [ "$(printf '%s\n' "${lines[@]:1}" | cut -d, -f24 | sort -u)" = ok ]
    done
    run -2 ninfer-bench --format all --layout row_split_k128_v1 --shape 128x64
}

@test "--activation a8: the A8 path, named in every record, checked against the A8 reference" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16,gguf_q4_0 --shape 256x256 --iters 3 --warmup 1 \
        --activation a8 --csv
    [ "${#lines[@]}" -eq 3 ]
    check_row "${lines[1]}" cpu gemv a8 q4_g64_fp16 row_split_k128_v1 "" 256 256 34816 3
    check_row "${lines[2]}" cpu gemv a8 gguf_q4_0 gguf_rows_v1 "" 256 256 $((256 * 8 * 18)) 3
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --activation a4
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --op decode --activation a8
}

@test "--hot: one copy, timed from cache; the peak line says so" {
    run -0 --separate-stderr ninfer-bench --format q8_g32_fp16 --shape 128x512 --iters 3 --hot --threads 1
    [[ "${lines[0]}" == *"; weights hot (in cache)" ]]
    [ "${#lines[@]}" -eq 3 ]
}

@test "the rotation and the peak buffer: max(--rotate-bytes, 4x the last-level cache + 1 MiB)" {
    local llc
    llc=$(for d in /sys/devices/system/cpu/cpu0/cache/index*; do
        [ "$(cat "$d/type")" = Instruction ] || echo "$(cat "$d/level") $(cat "$d/size")"
    done | sort -n | tail -1 | awk '{ print $2 }')
    [ -n "$llc" ] || skip "no cache sizes in sysfs"
    case "$llc" in
    *K) llc=$((${llc%K} * 1024)) ;;
    *M) llc=$((${llc%M} * 1048576)) ;;
    esac
    # the default: the cache sysfs names (the same size twice on one level: the largest)
    run -0 --separate-stderr env -u NF_BENCH_LLC_BYTES \
        ninfer-bench --format bf16 --shape 64x64 --iters 1 --warmup 0 --rotate-bytes 1M
    [[ "${lines[0]}" == *" MiB rotation buffer (>= 4x the $((llc / 1024)) KiB last-level cache), "* ]]
    local mib=${lines[0]#*passes over the }
    mib=${mib%% MiB*}
    [ "$mib" -ge $((4 * llc / 1048576)) ]
    run -0 --separate-stderr ninfer-bench --llc-bytes 1M --format bf16 --shape 64x64 --iters 1
    [[ "${lines[0]}" == *" over the 8 MiB rotation buffer (>= 4x the 1024 KiB "* ]]
    run -0 --separate-stderr ninfer-bench --llc-bytes 1M --rotate-bytes 3M --format bf16 --shape 64x64 --iters 1
    [[ "${lines[0]}" == *" over the 5 MiB rotation buffer "* ]]
    run -2 ninfer-bench --llc-bytes 0 --format bf16 --shape 64x64
    run -2 ninfer-bench --llc-bytes 1Q --format bf16 --shape 64x64
    NF_BENCH_LLC_BYTES=junk run -2 ninfer-bench --format bf16 --shape 64x64
    NF_BENCH_ROTATE_BYTES=junk run -2 ninfer-bench --format bf16 --shape 64x64
    run -2 ninfer-bench --llc-bytes 65G --format bf16 --shape 64x64
}

@test "a case that cannot run fails before any header: an encoding error (1), encode into gguf_* (4)" {
    run -1 --separate-stderr ninfer-bench --format nvfp4 --shape 100x64 --iters 3 --csv
    [ -z "$output" ]
    [[ "$stderr" == *"N % 128"* ]]
    expect_only_codes encoding
    # the second shape does not fit: nothing is measured, not even the first
    run -1 --separate-stderr ninfer-bench --format nvfp4 --shape 128x64,100x64 --iters 3 --csv
    [ -z "$output" ]
    run -1 --separate-stderr ninfer-bench --format q4_g64_fp16 --layout row_scale_v1 --shape 128x128 --iters 3
    [ -z "$output" ]
    expect_only_codes encoding
    run -4 --separate-stderr ninfer-bench --format q4_g64_fp16,gguf_q4_k --shape 64x512 --op encode --csv
    [ -z "$output" ]
    [[ "$stderr" == *"unsupported: gguf_q4_k"* ]]
}

# ---- artifact mode -------------------------------------------------------------------

@test "artifact mode: one case per parent object the --param glob reaches, sizes from the catalog" {
    nf-mkckpt ckpt > /dev/null 2>&1
    # text/alias: a second binding on lm_head.weight, benched once
    nf-st2manifest --logical ckpt |
        sed -z 's|"bindings": {\n|"bindings": {\n    "text/alias": {"object": "lm_head.weight"},\n|' > m.json
    grep -q '"text/alias"' m.json
    run -0 ninfer-quant -i m.json -o q.json 'text/*layers.0.*=q4_g64_fp16' \
        'text/*layers.1.mlp*=fp8_e4m3fn_row_bf16' 'text/lm_head.weight=nvfp4'
    run -0 ninfer-pack -q --no-sync --max-file-bytes 2M -o shards/q.ninfer q.json
    [ -e shards/q.ninfer.part-0001 ]
    run -0 --separate-stderr ninfer-bench --iters 3 --warmup 1 --csv --param 'text/*layers.0.*' shards/q.ninfer
    [ -z "$stderr" ]
    [ "${lines[0]}" = "$CSV_HEADER" ]
    # 7 matrices; the layer's two norms are vectors and are not benched
    [ "${#lines[@]}" -eq 8 ]
    local catalog row id bytes shape
    catalog=$(ninfer-cat --catalog shards/q.ninfer)
    for row in "${lines[@]:1}"; do
        id=$(cut -d, -f6 <<< "$row")
        [[ "$id" == model.layers.0.* ]]
        bytes=$(grep -o "\"id\":\"$id\",\"kind\":\"tensor\",\"shape\":\[[0-9]*,[0-9]*\][^}]*\"bytes\":[0-9]*" <<< "$catalog")
        shape=$(sed 's/.*"shape":\[\([0-9]*\),\([0-9]*\)\].*/\1 \2/' <<< "$bytes")
        check_row "$row" cpu gemv a16 q4_g64_fp16 row_split_k128_v1 "$id" "${shape% *}" "${shape#* }" "${bytes##*:}" 3
    done
    # a glob reaching one parent through two bindings: one case
    run -0 --separate-stderr ninfer-bench --iters 3 --warmup 1 --json --param 'text/[al][mli]*' shards/q.ninfer
    [ "${#lines[@]}" -eq 1 ]
    # nvfp4 [2048,256]: 262144 code bytes, 32768 scale bytes, one divisor
    [ "$(jnum object) $(jnum format) $(jnum rows) $(jnum cols) $(jnum bytes) $(jnum check)" = \
      "lm_head.weight nvfp4 2048 256 294916 ok" ]
    # the table names each object
    run -0 --separate-stderr ninfer-bench --iters 2 --warmup 0 --param 'text/*layers.0.mlp*' shards/q.ninfer
    [ "${#lines[@]}" -eq 5 ]
    [ "$(awk 'NR > 2 { print $6, $4 }' <<< "$output")" = "model.layers.0.mlp.gate_proj.weight q4_g64_fp16
model.layers.0.mlp.up_proj.weight q4_g64_fp16
model.layers.0.mlp.down_proj.weight q4_g64_fp16" ]
    # decode over the fp8 objects of layer 1
    run -0 --separate-stderr ninfer-bench --iters 3 --op decode --csv --param 'text/*layers.1.mlp.*' shards/q.ninfer
    [ "${#lines[@]}" -eq 4 ]
    check_row "${lines[1]}" cpu decode "" fp8_e4m3fn_row_bf16 row_scale_v1 model.layers.1.mlp.gate_proj.weight \
        688 256 $((688 * 256 + 688 * 2)) 3
}

@test "artifact mode: object IDs with ESC, TAB, LF, ',' and '\"': escaped and quoted in CSV (RFC 4180), escaped and cut in the table" {
    # the IDs as JSON text: ESC [31m, a tab, a newline, a comma, a quote; and a long one
    local hostile='w\u001b[31m,\t\"x\ny' long
    long=$(printf 'w.%0100d' 7)
    NF_OBJECTS="[$(nf_tensor "$hostile" "[2, 4]" 0 16), $(nf_tensor "$long" "[2, 4]" 256 16), $(nf_resource r.tok 512 488)]" \
        NF_BINDINGS="{\"text/a\": {\"object\": \"$hostile\"}, \"text/b\": {\"object\": \"$long\"}}" nf_make h.ninfer
    run -0 --separate-stderr ninfer-bench --iters 2 --warmup 0 --csv h.ninfer
    [ -z "$stderr" ]
    # header and two rows: the controls as \xHH (no raw byte, no second
    # physical line), the field quoted for its ',' and '"'
    [ "${#lines[@]}" -eq 3 ]
    [[ "${lines[1]}" == 'cpu,gemv,a16,bf16,contiguous_le_v1,"w\x1b[31m,\x09""x\x0ay",2,4,'*',ok' ]]
    [[ "${lines[2]}" == "cpu,gemv,a16,bf16,contiguous_le_v1,$long,2,4,"*",ok" ]]
    ! grep -q $'[\x01-\x1f\x7f]' <<< "$output"
    # a CSV reader sees 24 fields in each record, the ID as escaped
    # (python3's csv module, where python3 is installed: the tests need no Python)
    if command -v python3 > /dev/null; then
        python3 -c 'import csv, sys; rows = list(csv.reader(open(sys.argv[1], newline=""))); assert [len(r) for r in rows] == [24, 24, 24], rows; assert rows[1][5] == "w\\x1b[31m,\\x09\"x\\x0ay" and rows[2][5] == sys.argv[2]' \
            <(printf '%s\n' "$output") "$long"
    else
        echo "# python3 is not installed: the CSV is not read back by its csv module" >&3
    fi
    # the table: no raw control byte, the IDs escaped and cut to the column
    run -0 --separate-stderr ninfer-bench --iters 2 --warmup 0 h.ninfer
    [ "${#lines[@]}" -eq 4 ]
    ! grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<< "$output"
    ! grep -q $'\t' <<< "$output"
    [[ "${lines[2]}" == *' w\x1b[31m\x2c\x09\x22x\x0ay '* ]]
    [[ "${lines[3]}" == *" w.0000000000000000000000000000000000000000000... "* ]]
    # the object column as wide in every row: the columns after it start
    # where the header's do
    local at
    at=$(awk 'NR == 2 { print index($0, " rows ") }' <<< "$output")
    [ "$(awk -v at="$at" 'NR > 2 { print substr($0, at, 3) }' <<< "$output" | sort -u)" = " 2 " ]
    # JSON: the ID as a JSON string
    run -0 --separate-stderr ninfer-bench --iters 2 --warmup 0 --json --param text/a h.ninfer
    [[ "$output" == *'"object":"w\u001b[31m,\t\"x\ny",'* ]]
}

@test "artifact mode: an object in a missing part is part-missing (exit 3); the others still run" {
    NF_OBJECTS="[$(nf_tensor w.a "[2, 4]" 0 16), $(nf_resource r.tok 16 496), $(nf_tensor w.b "[2, 4]" 768 16)]" \
        NF_BINDINGS='{"text/a": {"object": "w.a"}, "text/b": {"object": "w.b"}}' nf_make e.ninfer 512 488
    [ "$(ninfer-cat --object w.b e.ninfer | wc -c)" -eq 16 ]  # w.b is in part 1
    rm e.ninfer.part-0001
    run -0 --separate-stderr ninfer-bench --iters 2 --csv --param text/a e.ninfer
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[1]}" == cpu,gemv,a16,bf16,contiguous_le_v1,w.a,2,4,[0-9]*,16,* ]]
    run -3 --separate-stderr ninfer-bench --iters 2 --csv --param 'text/*' e.ninfer
    expect_only_codes part-missing
    [ "${#lines[@]}" -eq 2 ]  # w.a was still benched
    [[ "${lines[1]}" == *,w.a,* ]]
    run -3 --separate-stderr ninfer-bench --iters 2 missing.ninfer
    expect_only_codes io
    [ -z "$output" ]  # nothing measured, no peak line or header first (red-team E8)
}

@test "artifact mode: '-', --shape and a --param that matches nothing are usage errors before anything is measured" {
    nf_make e.ninfer
    # red-team E19: the objects are read from the files, not a stream
    run -2 --separate-stderr ninfer-bench --iters 2 - < e.ninfer
    [ "$stderr" = "ninfer-bench: usage: ninfer-bench times objects read from an artifact's files, not a stream ('-') (see 'ninfer-bench --help')" ]
    [ -z "$output" ]
    run -2 ninfer-bench --shape 2x4 e.ninfer
    # red-team E24: a glob (or a name) that reaches no rank-2 tensor
    run -2 --separate-stderr ninfer-bench --iters 2 --param 'nomatch*' e.ninfer
    [ "$stderr" = "ninfer-bench: usage: --param 'nomatch*' matches no parameter with a rank-2 tensor to time (see 'ninfer-bench --help')" ]
    [ -z "$output" ]
    run -2 --separate-stderr ninfer-bench --iters 2 --param text/nope e.ninfer
    [ -z "$output" ]
    # the default '*' reaches the bf16 [2, 4] tensor
    run -0 --separate-stderr ninfer-bench --iters 2 --csv e.ninfer
    [ "${#lines[@]}" -eq 2 ]
}

# ---- devices -------------------------------------------------------------------------

@test "--device cuda without a CUDA build or device: unsupported (exit 4), in both modes" {
    has_gpu && skip "a CUDA build with a GPU: see the next test"
    run -4 --separate-stderr ninfer-bench --device cuda --format q4_g64_fp16 --shape 128x128 --iters 3 --json
    [ -z "$output" ]
    expect_only_codes unsupported
    nf_make e.ninfer
    run -4 --separate-stderr ninfer-bench --device cuda --iters 3 e.ninfer
    expect_only_codes unsupported
}

@test "--device cuda on a GPU: the same record, against the device's copy peak" {
    has_gpu || skip "no CUDA build with a GPU here (stub backend or no device)"
    run -0 --separate-stderr ninfer-bench --device cuda --format q4_g64_fp16 --shape 4096x4096 --iters 3 --json
    [ "${#lines[@]}" -eq 1 ]
    [ "$(jnum device) $(jnum threads) $(jnum bytes) $(jnum check)" = "cuda 0 8912896 ok" ]
}
