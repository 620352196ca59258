//! Expected results are cel-go's, as cel-spec specifies them (`doc/langdef.md`: numeric
//! equality, logical operators, macros, conversions, overflow) and as the Kubernetes libraries
//! implement them (`staging/src/k8s.io/apiserver/pkg/cel/library/{lists,regex,urls,ip,cidr,
//! quantity}.go`, v1.33, whose doc comments give most of the url, ip, cidr and quantity
//! examples used here; cel-go `ext/strings.go`, `ext/sets.go`).

use super::*;
use crate::yaml::{parse, ParseLimits};

fn run(src: &str) -> Result<String, EvalError> {
    let p =
        Program::compile(src).map_err(|e| EvalError::Error(format!("compile: {}", e.message)))?;
    let b = Bindings::new();
    let mut budget = Budget::new(DEFAULT_BUDGET);
    p.eval(&b, &mut budget).map(|v| v.to_text())
}

fn ok(src: &str, want: &str) {
    assert_eq!(run(src), Ok(want.to_string()), "{src}");
}

fn fails(src: &str, want: &str) {
    match run(src) {
        Err(EvalError::Error(m)) => assert!(m.contains(want), "{src}: {m}"),
        other => panic!("{src}: expected error {want:?}, got {other:?}"),
    }
}

fn unsupported(src: &str) {
    assert!(
        matches!(run(src), Err(EvalError::Unsupported(_))),
        "{src}: {:?}",
        run(src)
    );
}

#[test]
fn literals_and_arithmetic() {
    ok("1 + 2 * 3", "7");
    ok("-9223372036854775808", "-9223372036854775808");
    ok("0x10", "16");
    ok("3u + 4u", "7");
    ok("7 / 2", "3");
    ok("-7 % 3", "-1");
    ok("1.5 + 1.0", "2.5");
    ok("2.0 * 3.0", "6");
    ok("'ab' + 'cd'", "abcd");
    ok(r#""a\tb" == 'a\u0009b'"#, "true");
    ok("r'\\n'", "\\n");
    ok("'''multi\nline'''", "multi\nline");
    ok("b'abc' + b'd'", "abcd");
    ok("[1, 2] + [3]", "[1, 2, 3]");
    fails("9223372036854775807 + 1", "overflow");
    fails("-9223372036854775808 - 1", "overflow");
    fails("-9223372036854775808 / -1", "overflow");
    fails("0u - 1u", "overflow");
    fails("1 / 0", "division by zero");
    fails("1 % 0", "modulus by zero");
    fails("1 + 1u", "no such overload");
    fails("1 + 'a'", "no such overload");
}

#[test]
fn equality_and_comparison() {
    ok("1 == 1.0", "true");
    ok("1u == 1", "true");
    ok("1 == 1.5", "false");
    ok("2 < 2.5", "true");
    ok("3u > 2", "true");
    ok("'a' < 'b'", "true");
    ok("1 == 'a'", "false");
    ok("null == null", "true");
    ok("[1, 2] == [1, 2.0]", "true");
    ok("{'a': 1} == {'a': 1u}", "true");
    ok("{'a': 1} == {'b': 1}", "false");
    ok("[1] != [1, 2]", "true");
    ok("0.0/0.0 == 0.0/0.0", "false");
    fails("1 < 'a'", "no such overload");
}

#[test]
fn logic_absorbs_errors_commutatively() {
    ok("false && 1/0 == 1", "false");
    ok("1/0 == 1 && false", "false");
    ok("true || 1/0 == 1", "true");
    ok("1/0 == 1 || true", "true");
    fails("1/0 == 1 && true", "division by zero");
    fails("true && 1", "no such overload");
    ok("true ? 1 : 1/0", "1");
    ok("!true", "false");
    fails("1 ? 2 : 3", "no such overload");
}

#[test]
fn lists_maps_in_index() {
    ok("2 in [1, 2, 3]", "true");
    ok("2.0 in [1, 2, 3]", "true");
    ok("'a' in {'a': 1}", "true");
    ok("'b' in {'a': 1}", "false");
    ok("[1, 2, 3][1]", "2");
    ok("{'a': {'b': 5}}.a.b", "5");
    ok("{'a': 1}['a']", "1");
    fails("{'a': 1}.b", "no such key: b");
    fails("[1][3]", "index out of range");
    fails("{'a': 1, 'a': 2}", "repeated key");
    ok("has({'a': 1}.a)", "true");
    ok("has({'a': 1}.b)", "false");
    ok("size([1, 2]) + size({'a': 1}) + 'héllo'.size()", "8");
    ok("size(b'\\xff\\x00')", "2");
}

#[test]
fn macros() {
    ok("[1, 2, 3].all(x, x > 0)", "true");
    ok("[1, 2, 3].exists(x, x > 2)", "true");
    ok("[1, 2, 3].exists_one(x, x > 1)", "false");
    ok("[1, 2, 3].map(x, x * 2)", "[2, 4, 6]");
    ok("[1, 2, 3].map(x, x > 1, x * 10)", "[20, 30]");
    ok("[1, 2, 3].filter(x, x % 2 == 1)", "[1, 3]");
    ok("{'a': 1, 'b': 2}.all(k, k in ['a', 'b'])", "true");
    // An error is absorbed when another element decides, kept when none does.
    ok("[0, 1].exists(x, 1 / x == 1)", "true");
    ok("[0, 1].all(x, 1 / x > 5)", "false");
    fails("[0, 1].all(x, 1 / x > 0)", "division by zero");
    fails("[1].all(x, x)", "no such overload");
    assert!(Program::compile("[1].all(1, true)").is_err());
}

#[test]
fn conversions() {
    ok("int('42')", "42");
    ok("int(3.9)", "3");
    ok("int(-3.9)", "-3");
    ok("uint(5)", "5");
    ok("double(2)", "2");
    ok("string(1.5)", "1.5");
    ok("string(1e6)", "1e+06");
    ok("string(123456.0)", "123456");
    ok("string(0.0001)", "0.0001");
    ok("string(0.00001)", "1e-05");
    ok("string(true)", "true");
    ok("string(b'hi')", "hi");
    ok("bool('true') && !bool('f')", "true");
    ok("bytes('a') == b'a'", "true");
    ok("type(1) == int", "true");
    ok("type('a') == string", "true");
    ok(
        "type([]) == list && type({}) == map && type(null) == null_type",
        "true",
    );
    ok("type(type(1)) == type", "true");
    ok("dyn(1) == 1", "true");
    fails("int('x')", "cannot convert");
    fails("int(9.3e18)", "overflow");
    fails("uint(-1)", "overflow");
    fails("bool('yes')", "bool");
}

#[test]
fn time() {
    ok("duration('1h30m')", "5400s");
    ok("duration('1.5s')", "1.5s");
    ok("duration('300ms') < duration('1s')", "true");
    ok(
        "timestamp('2023-01-01T00:00:00Z') + duration('24h')",
        "2023-01-02T00:00:00Z",
    );
    ok(
        "timestamp('2023-01-01T01:00:00+01:00') == timestamp('2023-01-01T00:00:00Z')",
        "true",
    );
    ok(
        "timestamp('2023-03-01T00:00:00Z') - timestamp('2023-02-01T00:00:00Z')",
        "2419200s",
    );
    ok("timestamp('2024-02-29T10:20:30Z').getFullYear()", "2024");
    ok("timestamp('2024-02-29T10:20:30Z').getMonth()", "1");
    ok("timestamp('2024-02-29T10:20:30Z').getDayOfYear()", "59");
    ok("timestamp('1970-01-01T00:00:00Z').getDayOfWeek()", "4");
    ok("int(timestamp('1970-01-01T00:01:00Z'))", "60");
    fails("duration('1x')", "invalid duration");
    fails("timestamp('2023-02-30T00:00:00Z')", "invalid timestamp");
    unsupported("timestamp('2023-01-01T00:00:00Z').getHours('Europe/Paris')");
}

#[test]
fn strings() {
    ok(
        "'hello'.contains('ell') && 'hello'.startsWith('he') && 'hello'.endsWith('lo')",
        "true",
    );
    ok("'abc123'.matches('^[a-z]+[0-9]+$')", "true");
    ok("matches('xyz', 'y')", "true");
    fails("'a'.matches('(')", "invalid regular expression");
    ok("'hello'.charAt(1)", "e");
    ok("'hello'.charAt(5)", "");
    fails("'hello'.charAt(6)", "index out of range");
    ok("'hello mellow'.indexOf('ello')", "1");
    ok("'hello mellow'.indexOf('ello', 2)", "7");
    ok("'hello mellow'.indexOf('')", "0");
    ok("'hello mellow'.lastIndexOf('ello')", "7");
    ok("'hello mellow'.lastIndexOf('ello', 6)", "1");
    ok("'hello mellow'.lastIndexOf('')", "12");
    ok("'héllo'.indexOf('l')", "2");
    ok(
        "'TacoCat'.lowerAscii() + 'TacoCÆt'.upperAscii()",
        "tacocatTACOCÆT",
    );
    ok("'hello hello'.replace('he', 'we')", "wello wello");
    ok("'hello hello'.replace('he', 'we', 1)", "wello hello");
    ok("'hello hello'.split(' ')", r#"["hello", "hello"]"#);
    ok("'a,b,c'.split(',', 2)", r#"["a", "b,c"]"#);
    ok("'a,b'.split(',', 0)", "[]");
    ok("'abc'.split('')", r#"["a", "b", "c"]"#);
    ok("'tacocat'.substring(4)", "cat");
    ok("'tacocat'.substring(0, 4)", "taco");
    fails("'tacocat'.substring(4, 2)", "invalid substring range");
    fails("'tacocat'.substring(40)", "index out of range");
    ok("'  \\ttrim\\n '.trim()", "trim");
    ok("['a', 'b'].join()", "ab");
    ok("['a', 'b'].join('-')", "a-b");
    ok("'abc 123'.find('[0-9]+')", "123");
    ok("'abc'.find('[0-9]+')", "");
    ok("'123 abc 456'.findAll('[0-9]+')", r#"["123", "456"]"#);
    ok("'123 abc 456'.findAll('[0-9]+', 1)", r#"["123"]"#);
    unsupported("'%s'.format(['a'])");
}

#[test]
fn lists_and_sets() {
    ok("[1, 2, 3].isSorted()", "true");
    ok("['b', 'a'].isSorted()", "false");
    ok("[1, 2, 3].sum()", "6");
    ok("[1.5, 2.5].sum()", "4");
    ok("[].sum()", "0");
    ok("[3, 1, 2].min()", "1");
    ok("[3, 1, 2].max()", "3");
    fails("[].min()", "min called on empty list");
    ok("[1, 2, 2, 3].indexOf(2)", "1");
    ok("[1, 2, 2, 3].lastIndexOf(2)", "2");
    ok("[1, 2].indexOf(9)", "-1");
    ok("sets.contains([1, 2, 3], [1, 2])", "true");
    ok("sets.contains([1, 2], [1, 4])", "false");
    ok("sets.contains([1], [1.0])", "true");
    ok("sets.equivalent([1, 2], [2, 1, 1])", "true");
    ok("sets.intersects([1, 2], [3, 2])", "true");
    ok("sets.intersects([1], [])", "false");
}

#[test]
fn urls() {
    ok(
        "url('https://example.com:80/path?query=val#fragment').getScheme()",
        "https",
    );
    ok("url('https://example.com:80/').getHost()", "example.com:80");
    ok(
        "url('https://example.com:80/').getHostname()",
        "example.com",
    );
    ok("url('https://[::1]:80/').getHostname()", "::1");
    ok("url('https://[::1]:80/').getPort()", "80");
    ok("url('https://example.com/').getPort()", "");
    ok(
        "url('https://example.com/path with spaces/').getEscapedPath()",
        "/path%20with%20spaces/",
    );
    ok("url('https://example.com/path').getEscapedPath()", "/path");
    ok(
        "url('https://example.com/?k=a&k=b&x=1').getQuery()",
        r#"{"k": ["a", "b"], "x": ["1"]}"#,
    );
    ok("url('/absolute-path').getScheme()", "");
    ok(
        "url('https://example.com/p?q=1#frag').getQuery()",
        r#"{"q": ["1"]}"#,
    );
    ok("url('https://example.com/p#frag').getEscapedPath()", "/p");
    ok("isURL('https://user:pass@example.com:80/path')", "true");
    ok("isURL('../relative-path')", "false");
    ok("isURL('https://a b.com/')", "false");
    fails("url('../relative-path')", "URL parse error");
}

#[test]
fn ips_and_cidrs() {
    ok("isIP('127.0.0.1') && isIP('::1')", "true");
    ok("isIP('127.0.0.256')", "false");
    ok("isIP('::ffff:127.0.0.1')", "false");
    ok("isIP('fe80::1%eth0')", "false");
    ok("ip('127.0.0.1').family()", "4");
    ok("ip('::1').family()", "6");
    ok("ip('127.0.0.1').isLoopback()", "true");
    ok("ip('0.0.0.0').isUnspecified()", "true");
    ok("ip('169.254.1.1').isLinkLocalUnicast()", "true");
    ok("ip('224.0.0.1').isLinkLocalMulticast()", "true");
    ok("ip('8.8.8.8').isGlobalUnicast()", "true");
    ok("ip('127.0.0.1') == ip('127.0.0.1')", "true");
    ok("string(ip('127.0.0.1'))", "127.0.0.1");
    ok(
        "cidr('192.168.0.0/16').containsIP(ip('192.168.1.1'))",
        "true",
    );
    ok("cidr('192.168.0.0/16').containsIP('10.0.0.1')", "false");
    ok(
        "cidr('192.168.0.0/16').containsCIDR('192.168.1.0/24')",
        "true",
    );
    ok(
        "cidr('192.168.1.0/24').containsCIDR('192.168.0.0/16')",
        "false",
    );
    ok("cidr('192.168.1.5/24').masked()", "192.168.1.0/24");
    ok("cidr('192.168.1.5/24').ip()", "192.168.1.5");
    ok("cidr('::1/128').prefixLength()", "128");
    ok("isCIDR('10.0.0.0/33')", "false");
    fails("ip('x')", "parse error");
}

#[test]
fn quantities() {
    ok("quantity('1Gi').isGreaterThan(quantity('1G'))", "true");
    ok("quantity('500m').isLessThan(quantity('1'))", "true");
    ok("quantity('1k').compareTo(quantity('1000'))", "0");
    ok("quantity('1Ki').asInteger()", "1024");
    ok("quantity('50k').asApproximateFloat()", "50000");
    ok("quantity('1.5').isInteger()", "false");
    fails("quantity('1.5').asInteger()", "cannot convert");
    ok(
        "quantity('200M').add(quantity('50M')) == quantity('250M')",
        "true",
    );
    ok("quantity('50k').sub(20000) == quantity('30k')", "true");
    ok("quantity('-5').sign()", "-1");
    ok("isQuantity('20Mi') && !isQuantity('20Mb')", "true");
    fails("quantity('abc')", "quantities must match");
    fails("quantity('1').isLessThan(2)", "no such overload");
    unsupported("quantity('1').mul(2)");
}

/// cel-go's optional library (`cel.OptionalTypes`), which the API server enables: `.?` and
/// `[?]` select into an optional, the rest of a chain after one is optional too, and
/// `orValue`, `hasValue`, `value`, `or`, `optional.of/none/ofNonZeroValue` take it apart.
#[test]
fn optional_values() {
    ok("{'a': 1}.?a", "optional.of(1)");
    ok("{'a': 1}.?b", "optional.none()");
    ok("{'a': 1}.?b.orValue(7)", "7");
    ok("{'a': {'b': 2}}.?a.b", "optional.of(2)");
    ok("{'a': {'b': 2}}.?a.c", "optional.none()");
    ok("{'a': {'b': 2}}.?x.c.d", "optional.none()");
    ok("{'a': {'b': 2}}.?a.?b.value()", "2");
    ok("[1, 2][?1]", "optional.of(2)");
    ok("[1, 2][?5].hasValue()", "false");
    ok("{'k': 'v'}[?'k'].orValue('-')", "v");
    ok("{'k': 'v'}[?'x'].orValue('-')", "-");
    ok("optional.of(1) == optional.of(1)", "true");
    ok("optional.none() == optional.none()", "true");
    ok("optional.none().or(optional.of(3)).value()", "3");
    ok("optional.ofNonZeroValue('').hasValue()", "false");
    ok("optional.ofNonZeroValue([1]).hasValue()", "true");
    ok("type(optional.none())", "optional_type");
    fails("optional.none().value()", "optional.none() dereference");
    fails("'a'.?b", "no such overload");
}

#[test]
fn unsupported_is_never_a_guess() {
    unsupported("nosuchfunction(1)");
    unsupported("authorizer.group('apps')");
    unsupported(
        "authorizer.group('apps').resource('deployments').namespace('a').check('scale').allowed()",
    );
    ok("{'namespace': 1}.namespace", "1");
    unsupported("'a'.reverse()");
}

#[test]
fn parse_errors_are_clean() {
    for bad in [
        "", "1 +", "(1", "'abc", "a.", "1 ? 2", "for", "{1: 2", "a.b(", "\u{0}", "1 2",
    ] {
        assert!(Program::compile(bad).is_err(), "{bad:?}");
    }
    let e = Program::compile("1 + $").err();
    assert_eq!(e.map(|e| (e.start, e.end)), Some((4, 5)));
}

#[test]
fn deep_nesting_is_refused_quickly() {
    let n = 100_000;
    let cases = [
        format!("{}1{}", "(".repeat(n / 2), ")".repeat(n / 2)),
        "(".repeat(n),
        format!("a{}", ".b".repeat(n / 2)),
        format!("1{}", "+1".repeat(n / 2)),
        format!("{}1", "-".repeat(n)),
        format!("{}1", "!".repeat(n)),
        format!("{}1{}", "[".repeat(n / 2), "]".repeat(n / 2)),
        format!("{}x{}", "f(".repeat(n / 2), ")".repeat(n / 2)),
        format!("{}1", "true ? 1 : ".repeat(n / 11)),
        format!("a{}", "[0]".repeat(n / 3)),
        format!("x{}", ".f()".repeat(n / 4)),
        format!("{}1", "{1:".repeat(n / 3)),
    ];
    for c in cases {
        let e = Program::compile(&c).err();
        assert!(
            e.is_some_and(|e| e.message.contains("nested")),
            "{}",
            &c[..20]
        );
    }
    // A long flat expression is fine: a list is one level.
    let flat = format!("[{}]", vec!["1"; 20_000].join(","));
    assert!(Program::compile(&flat).is_ok());
}

#[test]
fn budget_stops_hostile_expressions() {
    let list = format!(
        "[{}]",
        (0..100)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let nested = format!("{list}.all(x, {list}.all(y, {list}.all(z, true)))");
    let p = Program::compile(&nested).unwrap();
    let mut budget = Budget::new(DEFAULT_BUDGET);
    assert_eq!(
        p.eval(&Bindings::new(), &mut budget).err(),
        Some(EvalError::Budget)
    );
    // Growth by concatenation in a comprehension.
    let grow =
        format!("{list}.map(x, {list}.map(y, 'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa' + 'a'))");
    let p = Program::compile(&grow).unwrap();
    let mut budget = Budget::new(10_000);
    assert_eq!(
        p.eval(&Bindings::new(), &mut budget).err(),
        Some(EvalError::Budget)
    );
    // A budget error is never absorbed by `||`.
    let p = Program::compile(&format!("true || {nested}")).unwrap();
    assert!(p.eval(&Bindings::new(), &mut Budget::new(100)).is_ok());
    let p = Program::compile(&format!("{nested} || true")).unwrap();
    assert_eq!(
        p.eval(&Bindings::new(), &mut Budget::new(1000)).err(),
        Some(EvalError::Budget)
    );
}

/// `'0123456789'` with `levels` rounds of `.replace('', '0123456789')`: 120, 1,330, 14,640,
/// 161,050 bytes… from a few dozen bytes of expression.
fn replaced(levels: usize) -> String {
    let mut s = "'0123456789'".to_string();
    for _ in 0..levels {
        s.push_str(".replace('', '0123456789')");
    }
    s
}

/// `v` bound in `levels` nested comprehensions, each of which copies the one before twice
/// (`[[a, a]].map(b, …)`): the value doubles at each level for the price of two reads.
fn doubled(seed: &str, levels: usize, pair: impl Fn(&str) -> String) -> String {
    let names: Vec<String> = (0..=levels).map(|i| format!("v{i}")).collect();
    let mut body = "true".to_string();
    for i in (1..=levels).rev() {
        body = format!("[{}].all({}, {body})", pair(&names[i - 1]), names[i]);
    }
    format!("[{seed}].all(v0, {body})")
}

/// What a function or operator produces is paid for before it is made, so an evaluation
/// stops at its budget instead of allocating gigabytes from a short expression or a small
/// object (each of these makes at least 2 GB unpriced).
#[test]
fn growing_output_is_paid_for_before_it_is_built() {
    let list = format!("{}.split('')", replaced(3));
    let hostile = [
        // 18 GB: the seventh round alone is 214 MB.
        replaced(8),
        format!("size({}) > 0", replaced(8)),
        format!("{}.replace('0', {})", replaced(4), replaced(3)),
        format!("size({list}.join({})) > 0", replaced(3)),
        format!("size({list}.join({}))", replaced(4)),
        format!("{list}.map(x, {}).size() > 0", replaced(4)),
        // Nested copies of one value through comprehension variables.
        doubled(&replaced(3), 30, |v| format!("[{v}, {v}]")),
        doubled(&format!("[{}]", replaced(3)), 30, |v| format!("{v} + {v}")),
        doubled(&replaced(3), 30, |v| format!("{v} + {v}")),
        doubled(&format!("{{'k': {}}}", replaced(3)), 30, |v| {
            format!("{{'a': {v}, 'b': {v}}}")
        }),
        doubled(&replaced(3), 30, |v| {
            format!("[{v}].map(x, [x, x]).map(y, y)")
        }),
        doubled(&replaced(3), 30, |v| {
            format!("optional.of([{v}, {v}]).orValue([])")
        }),
        doubled(&format!("[{}]", replaced(3)), 30, |v| {
            format!("[{v}, {v}].map(x, x)")
        }),
    ];
    for src in hostile {
        let p = Program::compile(&src).unwrap_or_else(|e| panic!("{src}: {e}"));
        let started = std::time::Instant::now();
        let got = p.eval(&Bindings::new(), &mut Budget::new(DEFAULT_BUDGET));
        assert_eq!(got.err(), Some(EvalError::Budget), "{src}");
        assert!(
            started.elapsed() < std::time::Duration::from_secs(5),
            "{src}: {:?}",
            started.elapsed()
        );
    }
    // What stays within the budget gives the same values as before.
    ok(&format!("size({})", replaced(3)), "14640");
    ok(&format!("size({})", replaced(4)), "161050");
    ok("'abc'.replace('', '-')", "-a-b-c-");
    ok("'abc'.replace('', '-', 2)", "-a-bc");
    ok("['a', 'b', 'c'].join('--')", "a--b--c");
    ok(&format!("size({list}.join('-'))"), "29279");
    ok("'a,b,,c'.split(',', 3)", r#"["a", "b", ",c"]"#);
    ok("size('héllo'.split(''))", "5");
    ok("[[1, 2], [3]].map(x, [x, x]).size()", "2");
    ok(&format!("size(b'x' + bytes({}))", replaced(5)), "1771561");
    // A query of many distinct keys is read in linear time, and paid for.
    let keys: Vec<String> = (0..100_000).map(|i| format!("k{i}")).collect();
    let parsed = parse(
        0,
        &format!("u: https://h/p?{}\n", keys.join("&")),
        ParseLimits::default(),
    );
    let mut b = Bindings::new();
    b.node("object", &parsed.documents[0].root);
    let p = Program::compile("size(url(object.u).getQuery())").unwrap();
    let started = std::time::Instant::now();
    let got = p
        .eval(&b, &mut Budget::new(DEFAULT_BUDGET))
        .map(|v| v.to_text());
    assert_eq!(got, Ok("100000".to_string()));
    assert!(
        started.elapsed() < std::time::Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    ok(
        "url('https://h/p?a=1&b=2&a=3').getQuery()",
        r#"{"a": ["1", "3"], "b": ["2"]}"#,
    );
    // An error that quotes a large value quotes the start of it.
    match run(&format!("int({})", replaced(4))) {
        Err(EvalError::Error(m)) => assert!(m.len() < 1024 && m.starts_with("cannot convert")),
        other => panic!("{other:?}"),
    }
}

const DEPLOY: &str = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
    tier: "1"
  annotations: ~
spec:
  replicas: 7
  paused: yes
  ratio: 1.0
  mode: "0755"
  perm: 0755
  template:
    spec:
      containers:
        - name: a
          image: nginx:1.25
        - name: b
          image: busybox
"#;

#[test]
fn yaml_nodes_are_read_lazily_and_keep_their_span() {
    let parsed = parse(0, DEPLOY, ParseLimits::default());
    let root = &parsed.documents[0].root;
    let mut b = Bindings::new();
    b.node("object", root);
    let eval = |src: &str| {
        let p = Program::compile(src).unwrap();
        p.eval(&b, &mut Budget::new(DEFAULT_BUDGET))
    };
    // An optional read of the object keeps the node, and a chain through it ends in a value.
    assert_eq!(
        eval("object.?spec.?replicas.orValue(1)")
            .unwrap()
            .span()
            .map(|s| &DEPLOY[s.range()]),
        Some("7")
    );
    assert_eq!(
        eval("object.?spec.?minReadySeconds.orValue(0)")
            .unwrap()
            .to_text(),
        "0"
    );
    assert_eq!(
        eval("object.?spec.?paused.orValue(false)")
            .unwrap()
            .to_text(),
        "true"
    );
    let v = eval("object.spec.replicas").unwrap();
    let span = v.span().unwrap();
    assert_eq!(&DEPLOY[span.range()], "7");
    assert_eq!(v.type_name(), "int");
    assert_eq!(
        eval("object.spec.replicas <= 5").unwrap().as_bool(),
        Some(false)
    );
    assert_eq!(eval("object.metadata.labels.tier").unwrap().to_text(), "1");
    assert_eq!(
        eval("object.metadata.labels.tier == '1'")
            .unwrap()
            .as_bool(),
        Some(true)
    );
    assert_eq!(
        eval("object.metadata.labels.tier == 1").unwrap().as_bool(),
        Some(false)
    );
    assert_eq!(eval("object.spec.paused").unwrap().as_bool(), Some(true));
    assert_eq!(
        eval("type(object.spec.ratio) == int").unwrap().as_bool(),
        Some(true)
    );
    assert_eq!(eval("object.spec.mode").unwrap().to_text(), "0755");
    assert_eq!(eval("object.spec.perm").unwrap().to_text(), "493");
    assert_eq!(
        eval("has(object.metadata.annotations)").unwrap().as_bool(),
        Some(false)
    );
    assert_eq!(
        eval("has(object.metadata.labels)").unwrap().as_bool(),
        Some(true)
    );
    assert_eq!(
        eval("object.metadata.annotations").err(),
        Some(EvalError::Error("no such key: annotations".into()))
    );
    assert_eq!(
        eval("object.spec.template.spec.containers.all(c, c.image.contains(':'))")
            .unwrap()
            .as_bool(),
        Some(false)
    );
    assert_eq!(
        eval("object.spec.template.spec.containers.map(c, c.name)")
            .unwrap()
            .to_text(),
        r#"["a", "b"]"#
    );
    let img = eval("object.spec.template.spec.containers[1].image").unwrap();
    assert_eq!(&DEPLOY[img.span().unwrap().range()], "busybox");
    assert_eq!(
        eval("'app' in object.metadata.labels").unwrap().as_bool(),
        Some(true)
    );
    assert_eq!(eval("size(object.metadata.labels)").unwrap().to_text(), "2");
    assert_eq!(
        eval("object.metadata.labels").unwrap().to_text(),
        r#"{"app": "web", "tier": "1"}"#
    );
    assert_eq!(
        eval("object.metadata.labels == {'app': 'web', 'tier': '1'}")
            .unwrap()
            .as_bool(),
        Some(true)
    );
    assert_eq!(
        eval("object.kind.lowerAscii()").unwrap().to_text(),
        "deployment"
    );
    assert_eq!(
        eval("undeclared.x").err(),
        Some(EvalError::Error(
            "undeclared reference to 'undeclared'".into()
        ))
    );
}

#[test]
fn no_panic_on_odd_input() {
    let odd = [
        "'\\u{110000}'",
        "'\\uD800'",
        "'\\x'",
        "b'\\377' + b'\\400'",
        "1e400",
        "1e",
        ".5",
        "0x",
        "18446744073709551616u",
        "9223372036854775808",
        "-9223372036854775809",
        "'é'.charAt(-1)",
        "'é'.substring(1, 1)",
        "'é'.lastIndexOf('', 1)",
        "[].join()",
        "{}.a",
        "null.a",
        "1.a",
        "[1][-1]",
        "[1][1.5]",
        "{1: 2}[1.0]",
        "{1.0: 2}",
        "'a'.split('', -1)",
        "quantity('1e9999')",
        "quantity('99999999999999999999999')",
        "quantity('1E').add(quantity('1E').sub(quantity('1n')))",
        "cidr('::/0').masked()",
        "cidr('0.0.0.0/0').containsIP('::1')",
        "url('http://[::1/')",
        "url('a:')",
        "duration('9999999999h')",
        "timestamp(253402300800)",
        "int(1e300)",
        "[1,2].sum() + [].max()",
        "'a' in 'abc'",
        "has(a)",
        "a?.b",
        "\u{feff}1",
    ];
    for src in odd {
        let _ = run(src);
    }
}

/// The deepest expressions accepted parse and evaluate on a 1 MiB stack, in a debug build.
#[test]
fn deepest_accepted_expressions_fit_a_small_stack() {
    let n = 62;
    let cases = [
        format!("{}1{}", "(".repeat(n), "+1)".repeat(n)),
        format!("{}1{}", "[".repeat(n), "]".repeat(n)),
        format!(
            "{}1{} == {}1{}",
            "[".repeat(n / 2 - 1),
            "]".repeat(n / 2 - 1),
            "[".repeat(n / 2 - 1),
            "]".repeat(n / 2 - 1)
        ),
        format!("{}true{}", "[1].all(x, ".repeat(n / 2), ")".repeat(n / 2)),
        format!("{}1{}", "-".repeat(n), ""),
        format!("{}1{}", "{1:".repeat(n), "}".repeat(n)),
        format!(
            "{}'a'{}",
            "(".repeat(n / 2),
            ".size() > 0 ? 'b' : 'c')".repeat(n / 2)
        ),
    ];
    for src in cases {
        let r = std::thread::Builder::new()
            .stack_size(1 << 20)
            .spawn(move || {
                let p = Program::compile(&src).map_err(|e| e.message)?;
                p.eval(&Bindings::new(), &mut Budget::new(DEFAULT_BUDGET))
                    .map(|v| v.to_text().len())
                    .map_err(|e| e.to_string())
            })
            .unwrap()
            .join();
        assert!(matches!(r, Ok(Ok(_)) | Ok(Err(_))), "stack");
    }
}

/// Token soup from a fixed-seed generator: whatever compiles evaluates without a panic, and
/// within its budget.
#[test]
fn random_token_soup_never_panics() {
    const TOKENS: &[&str] = &[
        "1",
        "2u",
        "1.5",
        "-",
        "+",
        "*",
        "/",
        "%",
        "==",
        "<",
        "&&",
        "||",
        "!",
        "?",
        ":",
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        ",",
        ".",
        "'a'",
        "b'x'",
        "null",
        "true",
        "x",
        "object",
        "spec",
        "replicas",
        "size",
        "all",
        "map",
        "filter",
        "exists_one",
        "in",
        "has",
        "int",
        "string",
        "matches",
        "'[a-z]+'",
        "split",
        "sets.contains",
        "quantity",
        "'1Gi'",
        "url",
        "ip",
        "cidr",
        "duration",
        "'1h'",
        "timestamp",
        "substring",
        "join",
    ];
    let yaml = "spec:\n  replicas: 3\n  items: [1, 2, 3]\n";
    let parsed = parse(0, yaml, ParseLimits::default());
    let mut b = Bindings::new();
    b.node("object", &parsed.documents[0].root);
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) as usize
    };
    for _ in 0..20_000 {
        let n = 1 + next() % 14;
        let src: Vec<&str> = (0..n).map(|_| TOKENS[next() % TOKENS.len()]).collect();
        let src = src.join(" ");
        if let Ok(p) = Program::compile(&src) {
            let mut budget = Budget::new(10_000);
            if let Ok(v) = p.eval(&b, &mut budget) {
                let _ = (v.to_text(), v.type_name(), v.span());
            }
        }
    }
}

#[test]
fn regex_compilation_is_costly_and_bounded() {
    // A pattern past the size limit is an error, not a long compilation.
    fails(
        "'a'.matches('(a{1000}){1000}')",
        "invalid regular expression",
    );
    // Patterns that differ on every step cannot be compiled thousands of times cheaply.
    let src = format!(
        "[{}].all(i, 'x'.matches('x{{' + string(i) + '}}') || true)",
        (0..1000)
            .map(|i| i.to_string())
            .collect::<Vec<_>>()
            .join(",")
    );
    let p = Program::compile(&src).unwrap();
    let mut budget = Budget::new(DEFAULT_BUDGET);
    assert_eq!(
        p.eval(&Bindings::new(), &mut budget).err(),
        Some(EvalError::Budget)
    );
}

/// RE2's classes and word boundaries are ASCII (cel-go matches with Go's `regexp`); `.`,
/// `\pL` and case folding stay Unicode.
#[test]
fn regular_expressions_are_re2s() {
    ok(r"'café'.matches('^caf\\b')", "true");
    ok(r"'cafés'.matches('caf\\B')", "false");
    ok(r"'é'.matches('\\w')", "false");
    ok(r"'é'.matches('^\\W$')", "true");
    ok(r"'٣'.matches('\\d')", "false");
    ok(r"'\u00a0'.matches('\\s')", "false");
    ok(r"'\u000b'.matches('\\s')", "false");
    ok(r"'é'.matches('^.$')", "true");
    ok(r"'é'.matches('^\\pL$')", "true");
    ok(r"'É'.matches('(?i)^é$')", "true");
    ok(r"'a[b'.matches('^a[[]b$')", "true");
    ok(r"'x٣y'.find('[\\d٣]')", "٣");
    ok(r"'a1 b22'.findAll('\\b\\w\\d+\\b')", r#"["a1", "b22"]"#);
    fails(r"'a'.matches('(')", "missing closing )");
}

/// Matching is priced by the text's length times the size of the pattern's automaton: what
/// the engines it may fall back on do. However the pattern drives the matcher (a word
/// boundary on non-ASCII text, a DFA that would have millions of states), an evaluation that
/// matches as often as its budget allows ends in well under a second.
#[test]
fn regular_expressions_cost_what_the_matcher_does() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let flips: String = (0..1 << 20)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            if x & 1 == 0 {
                'a'
            } else {
                'b'
            }
        })
        .collect();
    let yaml = format!("accents: {}\nflips: {flips}\n", "é ".repeat(300_000));
    let parsed = parse(0, &yaml, ParseLimits::default());
    let mut b = Bindings::new();
    b.node("object", &parsed.documents[0].root);
    for text in ["accents", "flips"] {
        for pattern in [
            r"\\b\\w+\\b\\s\\d",
            r"\\B\\w{3}\\B.{4}[0-9]",
            r"[ab]*a[ab]{20}c",
            r"(?:[ab]*a[ab]{30}){3}c",
            r"(?i)(\\pL|[ab]){8}c",
        ] {
            for call in ["matches", "find", "findAll"] {
                let src = format!(
                    "[1, 2, 3, 4, 5, 6, 7, 8].map(i, object.{text}.{call}('{pattern}')).size()"
                );
                let p = Program::compile(&src).unwrap();
                let started = std::time::Instant::now();
                let _ = p.eval(&b, &mut Budget::new(DEFAULT_BUDGET));
                assert!(
                    started.elapsed() < std::time::Duration::from_secs(1),
                    "{src}: {:?}",
                    started.elapsed()
                );
            }
        }
    }
    // A name checked against a pattern costs little.
    let p =
        Program::compile("'web-frontend-7'.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')").unwrap();
    let mut budget = Budget::new(DEFAULT_BUDGET);
    assert_eq!(
        p.eval(&Bindings::new(), &mut budget)
            .ok()
            .and_then(|v| v.as_bool()),
        Some(true)
    );
    assert!(
        DEFAULT_BUDGET - budget.remaining < 6_000,
        "{}",
        budget.remaining
    );
}

#[test]
fn reads_beyond_tells_metadata_reads_from_the_rest() {
    let beyond = |src: &str| {
        Program::compile(src)
            .unwrap()
            .reads_beyond("object", &["metadata"])
    };
    assert!(!beyond("object.metadata.labels.team == 'a'"));
    assert!(!beyond("has(object.metadata.labels) && params.x > 1"));
    assert!(!beyond("[1, 2].all(x, object.metadata.name.size() > x)"));
    assert!(beyond("object.spec.replicas <= 5"));
    assert!(beyond(
        "object.metadata.name != '' && object.spec.replicas > 0"
    ));
    assert!(beyond("object['metadata'].name == 'a'"));
    assert!(beyond("size(object) > 0"));
    assert!(beyond(
        "object.metadata.labels.all(k, k != '') && object.spec.template.spec.containers.all(c, c.image != '')"
    ));
    assert!(beyond("[1].exists(x, object.status.ready)"));
    let vars = Program::compile("variables.a || true").unwrap();
    assert!(vars.reads_beyond("variables", &[]));
    assert!(!Program::compile("object.metadata.name == 'a'")
        .unwrap()
        .reads_beyond("variables", &[]));
}

#[test]
fn only_path_is_the_one_field_an_expression_reads() {
    let only = |src: &str| Program::compile(src).unwrap().only_path("object");
    let path = |p: &[&str]| Some(p.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        only("object.spec.replicas <= 5"),
        path(&["spec", "replicas"])
    );
    assert_eq!(
        only("!has(object.spec.replicas) || object.spec.replicas <= params.max"),
        path(&["spec", "replicas"])
    );
    assert_eq!(
        only("object.spec.containers.all(c, c.image != '')"),
        path(&["spec", "containers"])
    );
    assert_eq!(
        only("has(object.spec.initContainers) && object.spec.containers.size() > 0"),
        None
    );
    assert_eq!(only("object['spec'].replicas > 1"), None);
    assert_eq!(only("params.max > 1"), None);
}
