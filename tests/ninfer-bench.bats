#!/usr/bin/env bats
# ninfer-bench: its --json and --csv records parsed and checked for what
# does not depend on the machine — fields, shapes, encoded sizes (DESIGN 8),
# sample counts, p10 <= median <= p90, positive rates — never for timings
# (DESIGN 12: benchmarks are commands, not timed tests). Generated weights
# and an artifact's own objects; exit statuses of DESIGN 3.
#
# Every run measures the CPU peak first (about a second): the suite keeps the
# number of runs small, and shapes and --iters small.

load helper

# has_gpu — a CUDA build on a machine with a GPU (else --device cuda is 4).
has_gpu() {
    ! grep -qa 'rebuild where nvcc is installed' "$NF_BIN/ninfer-bench" &&
        command -v nvidia-smi > /dev/null && nvidia-smi -L > /dev/null 2>&1
}

# check_json_record LINE N K FORMAT LAYOUT BYTES ITERS [OP [ACT]] — one --json record.
check_json_record() {
    local line=$1 output
    output=$1
    [ "$(json_field n)" = "$2" ]
    [ "$(json_field k)" = "$3" ]
    [ "$(json_field format)" = "$4" ]
    [ "$(json_field layout)" = "$5" ]
    [ "$(json_field encoded_bytes)" = "$6" ]
    [ "$(json_field iters)" = "$7" ]
    [ "$(json_field op)" = "${8:-gemv}" ]
    [ "$(json_field device)" = cpu ]
    [ "$(json_field activation)" = "$([ "${8:-gemv}" = gemv ] && echo "${9:-a16}" || echo -)" ]
    [ "$(json_field threads)" -ge 1 ]
    # the raw samples: as many as --iters, all positive
    local samples
    samples=$(grep -o '"samples_s":\[[^]]*\]' <<< "$line" | sed 's/^[^[]*\[//; s/\]$//' | tr ',' '\n')
    [ "$(wc -l <<< "$samples")" -eq "$7" ]
    awk '!($1 > 0) { bad++ } END { exit bad }' <<< "$samples"
    # percentiles in order, within the samples; rates positive and consistent
    awk -v med="$(json_field median_s)" -v p10="$(json_field p10_s)" -v p90="$(json_field p90_s)" \
        -v gbps="$(json_field gbps)" -v peak="$(json_field peak_gbps)" -v pct="$(json_field pct_of_peak)" \
        -v bytes="$6" '
        { if (NR == 1 || $1 < lo) lo = $1; if (NR == 1 || $1 > hi) hi = $1 }
        END {
            ok = p10 > 0 && p10 <= med && med <= p90 && lo <= p10 && p90 <= hi
            ok = ok && gbps > 0 && peak > 0 && pct > 0
            ok = ok && (gbps - bytes / med / 1e9) ^ 2 <= (1e-9 * gbps) ^ 2
            ok = ok && (pct - 100 * gbps / peak) ^ 2 <= (1e-9 * pct) ^ 2
            exit !ok }' <<< "$samples"
}

# check_csv_row ROW N K FORMAT LAYOUT BYTES [OP [ACT]] — one --csv data row:
# the peak in every row, the percentage consistent with it.
check_csv_row() {
    local act=${8:-a16}
    [ "${7:-gemv}" = gemv ] || act=-
    awk -F, -v n="$2" -v k="$3" -v f="$4" -v l="$5" -v b="$6" -v op="${7:-gemv}" -v act="$act" '
        { ok = NF == 16 && $2 == op && $3 == "cpu" && $4 == f && $5 == l && $6 == act && $7 >= 1
          ok = ok && $8 == n && $9 == k && $10 == b
          ok = ok && $12 > 0 && $12 <= $11 && $11 <= $13 && $14 >= 0 && $15 > 0 && $16 >= 0
          ok = ok && ($16 - 100 * $14 / $15) ^ 2 <= 0.06 ^ 2 + (0.002 * $16) ^ 2
          exit !ok }' <<< "$1"
}

CSV_HEADER="case,op,device,format,layout,activation,threads,n,k,encoded_bytes,median_s,p10_s,p90_s,gbps,peak_gbps,pct_of_peak"

@test "--help prints the usage (exit 0), --version the version" {
    run -0 --separate-stderr ninfer-bench --help
    [ "${lines[0]}" = "usage: ninfer-bench --format F [--layout L] --shape NxK [OPTIONS]" ]
    [ "${lines[1]}" = "       ninfer-bench ARTIFACT [--param GLOB] [OPTIONS]" ]
    [ -z "$stderr" ]
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
    run -2 ninfer-bench --format q4_g64_fp16 --layout nope --shape 128x128
    run -2 ninfer-bench --format q4_g64_fp16
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128
    run -2 ninfer-bench --format q4_g64_fp16 --shape 0x128
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --op matmul
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --device gpu
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --iters 0
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --threads 0
    run -2 ninfer-bench --format nvfp4 --shape 128x128 --divisors 0
    run -2 ninfer-bench --bogus
}

@test "--json: q4_g64_fp16 [4096,4096] gemv, one record, 8912896 encoded bytes (DESIGN 8)" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16 --shape 4096x4096 --iters 3 --warmup 1 --json
    [ -z "$stderr" ]
    [ "${#lines[@]}" -eq 1 ]
    # 4096 * 4096 / 2 code bytes + 4096 * (4096 / 64) * 2 scale bytes
    check_json_record "$output" 4096 4096 q4_g64_fp16 row_split_k128_v1 8912896 3
    [ "$(json_field case)" = 4096x4096 ]
}

@test "--json: decode and encode report the same fields (nvfp4 with 2 divisors)" {
    run -0 --separate-stderr ninfer-bench --format nvfp4 --shape 256x256 --divisors 2 \
        --op decode --iters 3 --warmup 0 --threads 1 --json
    [ "${#lines[@]}" -eq 1 ]
    # codes 32768, scales 4096, two fp32 divisors
    check_json_record "$output" 256 256 nvfp4 block_scale_k16_m128x4_v1 36872 3 decode
    run -0 --separate-stderr ninfer-bench --format fp8_e4m3fn_row_bf16 --shape 128x256 \
        --op encode --iters 4 --json
    [ "${#lines[@]}" -eq 1 ]
    check_json_record "$output" 128 256 fp8_e4m3fn_row_bf16 row_scale_v1 33024 4 encode
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
        [[ "${lines[1]}" == "$shape,gemv,cpu,$f,$layout,"* ]]
        check_csv_row "${lines[1]}" "${shape%x*}" "${shape#*x}" "$f" "$layout" "$bytes"
    done <<'EOF'
q2_g64_fp16 row_split_k128_v1 128x100 4608
q5_g64_fp16 row_split_k128_v1 128x200 21504
fp8_e4m3fn_row_bf16 row_scale_v1 256x200 51712
bf16 contiguous_le_v1 100x100 20000
EOF
}

@test "text output: the peak line, a header, one row with the case and the peak" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16 --shape 256x256 --iters 3 --threads 1
    [ "${#lines[@]}" -eq 3 ]
    # NF_BENCH_LLC_BYTES=2M (helper.bash): 4 x 2 MiB + 1 MiB = 9 MiB
    [[ "${lines[0]}" =~ ^#\ peak\ [0-9.]+\ GB/s\ \(CPU\ read-only\ passes\ over\ 9\ MiB\ =\ 4x\ the\ 2048\ KiB\ last-level\ cache,\ 1\ threads\;\ best\ so\ far,\ per\ row\)$ ]]
    [[ "${lines[1]}" == "case "*"op "*"act "*"format "*"peak "*"x_peak" ]]
    read -r case op act fmt n k bytes m1 m2 m3 gbps peak ratio <<< "${lines[2]}"
    [ "$case $op $act $fmt $n $k $bytes" = "256x256 gemv a16 q4_g64_fp16 256 256 34816" ]
    # the row's peak is at least the first line's (best so far), the ratio consistent
    awk -v p0="$(sed 's/^# peak \([0-9.]*\).*/\1/' <<< "${lines[0]}")" -v g="$gbps" -v p="$peak" -v r="$ratio" \
        'BEGIN { exit !(p >= p0 && p > 0 && (r - g / p) ^ 2 <= 0.006 ^ 2) }'
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
    done
    run -2 ninfer-bench --format all --layout row_split_k128_v1 --shape 128x64
}

@test "--activation a8: the A8 path, named in every record; usage errors" {
    run -0 --separate-stderr ninfer-bench --format q4_g64_fp16 --shape 256x256 --iters 3 --warmup 1 \
        --activation a8 --json
    [ "${#lines[@]}" -eq 1 ]
    check_json_record "$output" 256 256 q4_g64_fp16 row_split_k128_v1 34816 3 gemv a8
    run -0 --separate-stderr ninfer-bench --format q8_g32_fp16 --shape 64x128 --iters 2 --activation a8 --csv
    check_csv_row "${lines[1]}" 64 128 q8_g32_fp16 row_split_k128_v1 $((64 * 128 + 64 * 4 * 2)) gemv a8
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --activation a4
    run -2 ninfer-bench --format q4_g64_fp16 --shape 128x128 --op decode --activation a8
}

@test "the rotation and the peak buffer: 4x the last-level cache of sysfs, or --llc-bytes" {
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
    NF_BENCH_LLC_BYTES='' run -0 --separate-stderr env -u NF_BENCH_LLC_BYTES \
        ninfer-bench --format bf16 --shape 64x64 --iters 1 --warmup 0
    [[ "${lines[0]}" == *" MiB = 4x the $((llc / 1024)) KiB last-level cache, "* ]]
    local mib=${lines[0]#*passes over }
    mib=${mib%% MiB*}
    [ "$mib" -ge $((4 * llc / 1048576)) ]
    run -0 --separate-stderr ninfer-bench --llc-bytes 1M --format bf16 --shape 64x64 --iters 1
    [[ "${lines[0]}" == *" over 5 MiB = 4x the 1024 KiB "* ]]
    run -2 ninfer-bench --llc-bytes 0 --format bf16 --shape 64x64
    run -2 ninfer-bench --llc-bytes 1Q --format bf16 --shape 64x64
    NF_BENCH_LLC_BYTES=junk run -2 ninfer-bench --format bf16 --shape 64x64
    run -2 ninfer-bench --llc-bytes 65G --format bf16 --shape 64x64
}

@test "a shape the format cannot hold is an encoding error (exit 1)" {
    run -1 --separate-stderr ninfer-bench --format nvfp4 --shape 100x64 --iters 3 --csv
    [[ "$stderr" == *"N % 128"* ]]
    expect_only_codes encoding
    run -1 --separate-stderr ninfer-bench --format q4_g64_fp16 --layout row_scale_v1 --shape 128x128 --iters 3
    expect_only_codes encoding
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
        id=${row%%,*}
        [[ "$id" == model.layers.0.* ]]
        bytes=$(grep -o "\"id\":\"$id\",\"kind\":\"tensor\",\"shape\":\[[0-9]*,[0-9]*\][^}]*\"bytes\":[0-9]*" <<< "$catalog")
        shape=$(sed 's/.*"shape":\[\([0-9]*\),\([0-9]*\)\].*/\1 \2/' <<< "$bytes")
        check_csv_row "$row" "${shape% *}" "${shape#* }" q4_g64_fp16 row_split_k128_v1 "${bytes##*:}"
    done
    # a glob reaching one parent through two bindings: one case
    run -0 --separate-stderr ninfer-bench --iters 3 --warmup 1 --json --param 'text/[al][mli]*' shards/q.ninfer
    [ "${#lines[@]}" -eq 1 ]
    # nvfp4 [2048,256]: 262144 code bytes, 32768 scale bytes, one divisor
    check_json_record "${lines[0]}" 2048 256 nvfp4 block_scale_k16_m128x4_v1 294916 3
    [[ "${lines[0]}" == '{"case":"lm_head.weight",'* ]]
    # the table names each object in its first column
    run -0 --separate-stderr ninfer-bench --iters 2 --warmup 0 --param 'text/*layers.0.mlp*' shards/q.ninfer
    [ "${#lines[@]}" -eq 5 ]
    [ "$(awk 'NR > 2 { print $1, $4 }' <<< "$output")" = "model.layers.0.mlp.gate_proj.weight q4_g64_fp16
model.layers.0.mlp.up_proj.weight q4_g64_fp16
model.layers.0.mlp.down_proj.weight q4_g64_fp16" ]
    # decode over the fp8 objects of layer 1
    run -0 --separate-stderr ninfer-bench --iters 3 --op decode --csv --param 'text/*layers.1.mlp.*' shards/q.ninfer
    [ "${#lines[@]}" -eq 4 ]
    check_csv_row "${lines[1]}" 688 256 fp8_e4m3fn_row_bf16 row_scale_v1 $((688 * 256 + 688 * 2)) decode
}

@test "artifact mode: an object in a missing part is part-missing (exit 3); the others still run" {
    NF_OBJECTS="[$(nf_tensor w.a "[2, 4]" 0 16), $(nf_resource r.tok 16 496), $(nf_tensor w.b "[2, 4]" 768 16)]" \
        NF_BINDINGS='{"text/a": {"object": "w.a"}, "text/b": {"object": "w.b"}}' nf_make e.ninfer 512 488
    [ "$(ninfer-cat --object w.b e.ninfer | wc -c)" -eq 16 ]  # w.b is in part 1
    rm e.ninfer.part-0001
    run -0 --separate-stderr ninfer-bench --iters 2 --csv --param text/a e.ninfer
    [ "${#lines[@]}" -eq 2 ]
    [[ "${lines[1]}" == w.a,gemv,cpu,bf16,contiguous_le_v1,a16,[0-9]*,2,4,16,* ]]  # too small for a nonzero %.3f GB/s
    run -3 --separate-stderr ninfer-bench --iters 2 --csv --param 'text/*' e.ninfer
    expect_only_codes part-missing
    [ "${#lines[@]}" -eq 2 ]  # w.a was still benched
    [[ "${lines[1]}" == w.a,* ]]
    run -3 --separate-stderr ninfer-bench --iters 2 missing.ninfer
    expect_only_codes io
    [ -z "$output" ]  # nothing measured, no peak line or header first (red-team E8)
}

@test "artifact mode: '-' and a --param that matches nothing are usage errors before anything is measured" {
    nf_make e.ninfer
    # red-team E19: the objects are read from the files, not a stream
    run -2 --separate-stderr ninfer-bench --iters 2 - < e.ninfer
    [ "$stderr" = "ninfer-bench: usage: ninfer-bench times objects read from an artifact's files, not a stream ('-') (see 'ninfer-bench --help')" ]
    [ -z "$output" ]
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
    [ "$(json_field device)" = cuda ]
    [ "$(json_field bytes)" = 8912896 ]
    [ "$(json_field check)" = ok ]
}
