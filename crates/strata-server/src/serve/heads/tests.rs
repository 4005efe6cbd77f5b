use super::*;

/// What the scanner hands on for `input` read in pieces of `piece` bytes.
fn scan(input: &[u8], piece: usize) -> Vec<u8> {
    let mut scanner = Scanner::default();
    let mut out = Vec::new();
    for part in input.chunks(piece) {
        scanner.feed(part, &mut out);
    }
    out.extend(scanner.finish());
    out
}

/// The same output whatever the read sizes.
fn scan_all_ways(input: &[u8]) -> Vec<u8> {
    let whole = scan(input, input.len().max(1));
    for piece in [1, 2, 3, 5, 7, 64, 4096] {
        assert_eq!(scan(input, piece), whole, "pieces of {piece}");
    }
    whole
}

const PLAIN: &[u8] = b"\r\nGET /api/v1/query?query=up HTTP/1.1\r\nHost: a\r\n\r\n\
    POST /api/v1/write HTTP/1.1\r\nContent-Length: 26\r\n\r\n\
    GET /x HTTP/1.1\r\n\r\nabcdefgh\
    POST /api/v1/import/prometheus HTTP/1.1\nTransfer-Encoding: gzip, chunked\n\n\
    5;ext=1\r\nGET /\r\n11\r\n HTTP/1.1\r\n\r\nxyz123\r\n0\r\nTrailer: t\r\n\r\n\
    GET /last HTTP/1.0\r\n\r\n";

#[test]
fn ordinary_requests_pass_unchanged() {
    assert_eq!(scan_all_ways(PLAIN), PLAIN);
}

fn long_get(query_len: usize) -> Vec<u8> {
    let query = format!("query={}", "x".repeat(query_len));
    format!("GET /api/v1/query?{query} HTTP/1.1\r\nHost: a\r\n\r\n").into_bytes()
}

#[test]
fn a_long_target_moves_its_query_into_a_header() {
    let mut input = long_get(100_000);
    input.extend_from_slice(PLAIN);
    let out = scan_all_ways(&input);
    let want = format!(
        "GET /api/v1/query HTTP/1.1\r\nHost: a\r\n{QUERY_HEADER}: query={}\r\n\r\n",
        "x".repeat(100_000)
    );
    assert_eq!(out.get(..want.len()), Some(want.as_bytes()));
    assert_eq!(out.get(want.len()..), Some(PLAIN));
    // At the limit, nothing changes.
    let at_limit = long_get(MAX_URI - "/api/v1/query?query=".len());
    assert_eq!(scan_all_ways(&at_limit), at_limit);
}

#[test]
fn clients_cannot_send_internal_headers() {
    let input = format!(
        "GET /api/v1/query?query=up HTTP/1.1\r\n{REFUSED_HEADER}: head\r\nHost: a\r\n\
         Strata-Internal-Query: query=secret\r\n\r\n"
    );
    let out = scan_all_ways(input.as_bytes());
    assert_eq!(
        String::from_utf8(out).unwrap(),
        "GET /api/v1/query?query=up HTTP/1.1\r\nHost: a\r\n\r\n"
    );
}

#[test]
fn oversized_heads_are_refused_after_their_end() {
    let mut input = long_get(MAX_HEAD);
    input.extend_from_slice(PLAIN);
    assert_eq!(scan_all_ways(&input), Refusal::RequestLine.head());
    let mut huge_headers = b"GET / HTTP/1.1\r\n".to_vec();
    for i in 0..20_000 {
        huge_headers.extend(format!("x-h{i}: {}\r\n", "v".repeat(50)).bytes());
    }
    huge_headers.extend_from_slice(b"\r\n");
    assert_eq!(scan_all_ways(&huge_headers), Refusal::Head.head());
    // Nothing is handed on before the refused head has ended.
    assert!(scan(huge_headers.get(..MAX_HEAD + 10).unwrap(), 4096).is_empty());
    let long_path = format!("GET /{} HTTP/1.1\r\n\r\n", "p".repeat(MAX_URI));
    assert_eq!(scan_all_ways(long_path.as_bytes()), Refusal::Path.head());
}

#[test]
fn http2_and_upgrades_pass_unchanged() {
    let mut h2 = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    h2.extend_from_slice(&[0, 0, 4, 1, 0, b'\n', b'\n']);
    h2.extend_from_slice(&long_get(70_000));
    assert_eq!(scan_all_ways(&h2), h2);
    let mut upgrade = b"GET /ws HTTP/1.1\r\nUpgrade: websocket\r\n\r\n".to_vec();
    upgrade.extend_from_slice(&long_get(70_000));
    assert_eq!(scan_all_ways(&upgrade), upgrade);
}

#[test]
fn framing_hyper_refuses_makes_the_rest_opaque() {
    for bad in [
        "POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n",
        "POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ] {
        let mut input = bad.as_bytes().to_vec();
        input.extend_from_slice(&long_get(70_000));
        assert_eq!(scan_all_ways(&input), input, "{bad:?}");
    }
}

#[test]
fn a_connection_ending_mid_head_hands_it_on() {
    let input = b"GET /api/v1/query?query=up HTTP/1.1\r\nHost:";
    assert_eq!(scan_all_ways(input), input);
}

#[test]
fn heads_are_found_by_framing_not_by_looks() {
    // Bodies that look like long requests stay bodies.
    let lookalike = long_get(70_000);
    let mut bodies = format!(
        "POST /a HTTP/1.1\r\nContent-Length: {}\r\n\r\n",
        lookalike.len()
    )
    .into_bytes();
    bodies.extend_from_slice(&lookalike);
    bodies.extend(
        format!(
            "POST /b HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n{:x}\r\n",
            lookalike.len()
        )
        .bytes(),
    );
    bodies.extend_from_slice(&lookalike);
    bodies.extend_from_slice(b"\r\n0\r\n\r\n");
    let mut input = bodies.clone();
    input.extend_from_slice(&long_get(70_000));
    let out = scan_all_ways(&input);
    assert_eq!(out.get(..bodies.len()), Some(&bodies[..]));
    let last = out.get(bodies.len()..).unwrap();
    assert!(
        last.starts_with(b"GET /api/v1/query HTTP/1.1\r\n"),
        "{:?}",
        last.get(..40)
    );
}

/// As the connection stream reads: what passes in place, then the rest
/// through the scanner.
fn scan_in_place(input: &[u8], piece: usize) -> (Vec<u8>, usize) {
    let mut scanner = Scanner::default();
    let (mut out, mut in_place) = (Vec::new(), 0);
    for part in input.chunks(piece) {
        let n = scanner.pass_in_place(part);
        in_place += n;
        out.extend_from_slice(&part[..n]);
        scanner.feed(&part[n..], &mut out);
    }
    out.extend(scanner.finish());
    (out, in_place)
}

#[test]
fn heads_that_need_no_rewriting_pass_in_place() {
    let mut long = long_get(100_000);
    long.extend_from_slice(PLAIN);
    for input in [PLAIN.to_vec(), long] {
        let want = scan_all_ways(&input);
        for piece in [1, 7, 64, 4096, input.len()] {
            assert_eq!(scan_in_place(&input, piece).0, want, "pieces of {piece}");
        }
    }
    // Remote writes read whole: nothing is copied.
    let writes = b"POST /api/v1/write HTTP/1.1\r\nContent-Length: 4\r\n\r\nabcd\
        POST /api/v1/write HTTP/1.1\r\nContent-Length: 2\r\n\r\nef";
    assert_eq!(
        scan_in_place(writes, writes.len()),
        (writes.to_vec(), writes.len())
    );
}
