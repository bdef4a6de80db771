"""Outputs of tools the compressors have no rules for, written by hand in their real shapes.

Each builder returns ``(text, must)``: the output as the tool prints it, and the lines a
reader needs whatever the budget (failures, their locations, warnings, totals). They
stand in for formats the detector has never seen, so the generic path is what they test.
"""

from __future__ import annotations

import itertools


def _crates(n: int) -> list[str]:
    names = ["serde", "tokio", "syn", "quote", "proc-macro2", "libc", "memchr", "regex", "bytes", "mio"]
    return [f"   Compiling {names[i % 10]}{'' if i < 10 else f'-{i}'} v1.{i % 7}.{i % 13}" for i in range(n)]


def cargo_build_error(crates: int = 120) -> tuple[str, list[str]]:
    """cargo build: a long run of ``Compiling`` lines, one type error in the middle, one warning."""
    lines = [
        "    Updating crates.io index",
        *[f"  Downloaded {c} v0.{i}.{i % 5}" for i, c in enumerate(["anyhow", "clap", "log", "once_cell", "itoa"])],
        "  Downloaded 5 crates (1.1 MB) in 0.82s",
    ]
    lines += _crates(crates // 2)
    lines += [
        "   Compiling inventory v0.3.0 (/home/dev/inventory)",
        "warning: unused import: `std::collections::HashMap`",
        " --> src/store.rs:3:5",
        "  |",
        "3 | use std::collections::HashMap;",
        "  |     ^^^^^^^^^^^^^^^^^^^^^^^^^",
        "  |",
        "  = note: `#[warn(unused_imports)]` on by default",
        "",
        "error[E0308]: mismatched types",
        "  --> src/main.rs:42:23",
        "   |",
        "42 |     let count: usize = args.get(1);",
        "   |                -----   ^^^^^^^^^^^ expected `usize`, found `Option<&String>`",
        "   |                |",
        "   |                expected due to this",
        "   |",
        "   = note: expected type `usize`",
        "              found enum `Option<&String>`",
        "",
    ]
    lines += _crates(crates)[crates // 2 :]
    lines += [
        "For more information about this error, try `rustc --explain E0308`.",
        'warning: `inventory` (bin "inventory") generated 1 warning',
        'error: could not compile `inventory` (bin "inventory") due to 1 previous error; 1 warning emitted',
    ]
    must = [
        "warning: unused import: `std::collections::HashMap`",
        " --> src/store.rs:3:5",
        "error[E0308]: mismatched types",
        "  --> src/main.rs:42:23",
        lines[-1],
    ]
    return "\n".join(lines) + "\n", must


_SMELLS = [
    ("DuplicateMethodCall", "calls '{x}.id' 2 times", "Duplicate-Method-Call"),
    ("TooManyStatements", "has approx {n} statements", "Too-Many-Statements"),
    ("UtilityFunction", "doesn't depend on instance state (maybe move it to another class?)", "Utility-Function"),
    ("FeatureEnvy", "refers to '{x}' more than self (maybe move it to another class?)", "Feature-Envy"),
    ("UncommunicativeVariableName", "has the variable name '{v}'", "Uncommunicative-Variable-Name"),
    ("NilCheck", "performs a nil-check", "Nil-Check"),
    ("LongParameterList", "has {n} parameters", "Long-Parameter-List"),
]


def reek_report(files: int = 12) -> tuple[str, list[str]]:
    """reek: per-file headers with a warning count, one bracketed-line warning per smell, a total."""
    lines: list[str] = []
    must: list[str] = []
    total = 0
    classes = ["Order", "Invoice", "User", "Cart", "Payment", "Shipment", "Report", "Account"]
    smell = itertools.cycle(_SMELLS)
    for f in range(files):
        klass = classes[f % len(classes)]
        count = 3 + (f * 5) % 6
        path = f"app/models/{klass.lower()}{'' if f < len(classes) else f'_{f}'}.rb"
        header = f"{path} -- {count} warnings:"
        lines.append(header)
        must.append(header)
        for k in range(count):
            name, text, doc = next(smell)
            message = text.format(x="item", n=6 + k, v=chr(97 + k))
            where = f"[{10 + 7 * k}, {14 + 7 * k}]" if name == "DuplicateMethodCall" else f"[{8 + 9 * k}]"
            line = f"  {where}:{name}: {klass}#method_{k} {message} [https://github.com/troessner/reek/blob/v6.1.4/docs/{doc}.md]"
            lines.append(line)
            must.append(line)
        total += count
    lines.append(f"{total} total warnings")
    must.append(lines[-1])
    return "\n".join(lines) + "\n", must


def rubocop_progress(files: int = 40) -> tuple[str, list[str]]:
    """rubocop with the default formatter: a progress line, offenses with code excerpts, a tally."""
    letters = "".join("C" if i % 3 else "." for i in range(files))
    lines = [f"Inspecting {files} files", letters[: files - 2] + "WE", "", "Offenses:", ""]
    must = []
    for n in range(files // 2):
        lines += [
            f"app/services/sync_{n}.rb:{4 + n}:81: C: Layout/LineLength: Line is too long. [{96 + n}/80]",
            '    Rails.logger.info("syncing #{record.id} with the remote catalogue, attempt #{attempt}")',
            "                                                                                ^^^^^^^^^^^^^^^^",
        ]
    warning = "app/services/sync_3.rb:17:7: W: Lint/UselessAssignment: Useless assignment to variable - result."
    error = "app/jobs/import_job.rb:9:1: E: Lint/Syntax: unexpected token kEND"
    lines += [warning, "      result = client.fetch(id)", "      ^^^^^^", error, "end", "^^^", ""]
    lines.append(f"{files} files inspected, {files // 2 + 2} offenses detected, {files // 2} offenses autocorrectable")
    must += [warning, error, lines[-1]]
    return "\n".join(lines) + "\n", must


def eslint_warnings(files: int = 8) -> tuple[str, list[str]]:
    """eslint stylish with warnings only (no errors): each finding has a location, then the tally."""
    lines = [""]
    must = []
    total = 0
    for f in range(files):
        lines.append(f"/home/dev/web/src/components/Widget{f}.jsx")
        for k in range(4):
            line = f"  {12 + 9 * k}:{5 + k}  warning  Unexpected console statement  no-console"
            if k == 3:
                line = (
                    f"  {40 + f}:7   warning  React Hook useEffect has a missing dependency: 'load'  react-hooks/exhaustive-deps"
                )
            lines.append(line)
            must.append(line)
            total += 1
        lines.append("")
    lines.append(f"✖ {total} problems (0 errors, {total} warnings)")
    must.append(lines[-1])
    return "\n".join(lines) + "\n", must


def go_vet(packages: int = 6) -> tuple[str, list[str]]:
    """go vet: ``# package`` headers and ``file:line:col: message`` findings (no severity word)."""
    lines: list[str] = []
    must: list[str] = []
    for p in range(packages):
        lines.append(f"# example.com/shop/internal/pkg{p}")
        findings = [
            f"internal/pkg{p}/handler.go:{31 + p}:3: fmt.Printf format %d has arg name of wrong type string",
            f"internal/pkg{p}/store.go:{88 + p}:2: unreachable code",
            f"internal/pkg{p}/store.go:{120 + p}:9: result of fmt.Sprintf call not used",
        ]
        if p % 2:
            findings.append(f"internal/pkg{p}/worker.go:{12 + p}:6: loop variable job captured by func literal")
        lines += [f"./{finding}" for finding in findings]
        must += [f"./{finding}" for finding in findings]
    return "\n".join(lines) + "\n", must


def mypy_run(clean_files: int = 60) -> tuple[str, list[str]]:
    """mypy with --verbose-ish noise lines, errors with notes, and the Found line."""
    lines = [f"LOG:  Parsing /src/app/module_{i}.py (app.module_{i})" for i in range(clean_files)]
    errors = [
        'app/billing.py:41: error: Argument 1 to "charge" has incompatible type "str"; expected "Decimal"  [arg-type]',
        'app/billing.py:77: error: Item "None" of "Optional[Customer]" has no attribute "email"  [union-attr]',
        "app/api/routes.py:12:5: error: Function is missing a return type annotation  [no-untyped-def]",
    ]
    lines += [errors[0], errors[1], "app/billing.py:77: note: Use 'if x is not None:' to narrow", errors[2]]
    lines.append("Found 3 errors in 2 files (checked 64 source files)")
    return "\n".join(lines) + "\n", [*errors, lines[-1]]


def tsc_pretty(errors: int = 6) -> tuple[str, list[str]]:
    """tsc --pretty: ``file:line:col - error TSxxxx`` with a code frame, then the Found line."""
    lines: list[str] = []
    must: list[str] = []
    for n in range(errors):
        head = f"src/pages/orders/view{n}.tsx:{20 + n}:{7 + n} - error TS2339: Property 'total' does not exist on type 'Order'."
        lines += [
            head,
            "",
            f"{20 + n}     const sum = order.total + shipping;",
            "                          ~~~~~",
            "",
        ]
        must.append(head)
    lines += ["", f"Found {errors} errors in {errors} files.", ""]
    lines += ["Errors  Files", *[f"     1  src/pages/orders/view{n}.tsx:{20 + n}" for n in range(errors)]]
    must.append(f"Found {errors} errors in {errors} files.")
    return "\n".join(lines) + "\n", must


def jest_summary(passing: int = 80) -> tuple[str, list[str]]:
    """jest --verbose with the final Tests:/Test Suites: tallies and one failing test."""
    lines = ["PASS src/cart/total.test.ts"]
    lines += [f"  ✓ sums line {n} with tax (3 ms)" for n in range(passing // 2)]
    lines += ["PASS src/cart/discount.test.ts"]
    lines += [f"  ✓ applies coupon {n} (1 ms)" for n in range(passing // 2)]
    lines += [
        "FAIL src/cart/checkout.test.ts",
        "  checkout",
        "    ✓ builds the payload (4 ms)",
        "    ✕ rejects an expired card (9 ms)",
        "",
        "  ● checkout › rejects an expired card",
        "",
        "    expect(received).rejects.toThrow()",
        "",
        "    Received promise resolved instead of rejected",
        '    Resolved to value: {"status": "ok"}',
        "",
        "      21 |   it('rejects an expired card', async () => {",
        "      22 |     const card = expiredCard();",
        "    > 23 |     await expect(checkout(card)).rejects.toThrow();",
        "         |           ^",
        "      24 |   });",
        "",
        "      at Object.toThrow (node_modules/expect/build/index.js:218:22)",
        "      at Object.<anonymous> (src/cart/checkout.test.ts:23:11)",
        "",
        "Test Suites: 1 failed, 2 passed, 3 total",
        f"Tests:       1 failed, {passing + 1} passed, {passing + 2} total",
        "Snapshots:   0 total",
        "Time:        4.113 s",
        "Ran all test suites.",
    ]
    must = [
        "FAIL src/cart/checkout.test.ts",
        "  ● checkout › rejects an expired card",
        "      at Object.<anonymous> (src/cart/checkout.test.ts:23:11)",
        "Test Suites: 1 failed, 2 passed, 3 total",
        f"Tests:       1 failed, {passing + 1} passed, {passing + 2} total",
    ]
    return "\n".join(lines) + "\n", must


def gradle_compile_failure(tasks: int = 40) -> tuple[str, list[str]]:
    """gradle build: task lines, a javac error with its location, the failure block."""
    lines = ["Starting a Gradle Daemon (subsequent builds will be faster)", "", "> Configure project :app"]
    lines += [f"> Task :lib{n}:compileJava UP-TO-DATE" for n in range(tasks)]
    lines += [f"> Task :lib{n}:processResources NO-SOURCE" for n in range(tasks // 2)]
    error = "/home/dev/shop/app/src/main/java/com/shop/OrderService.java:57: error: cannot find symbol"
    lines += [
        "> Task :app:compileJava",
        error,
        "        return repository.findAllByCustomer(customerId);",
        "                         ^",
        "  symbol:   method findAllByCustomer(long)",
        "  location: variable repository of type OrderRepository",
        "Note: Some input files use unchecked or unsafe operations.",
        "Note: Recompile with -Xlint:unchecked for details.",
        "1 error",
        "",
        "> Task :app:compileJava FAILED",
        "",
        "FAILURE: Build failed with an exception.",
        "",
        "* What went wrong:",
        "Execution failed for task ':app:compileJava'.",
        "> Compilation failed; see the compiler error output for details.",
        "",
        "* Try:",
        "> Run with --info option to get more log output.",
        "> Run with --scan to get full insights.",
        "",
        "BUILD FAILED in 14s",
        f"{tasks + 3} actionable tasks: 2 executed, {tasks + 1} up-to-date",
    ]
    must = [
        error,
        "1 error",
        "> Task :app:compileJava FAILED",
        "Execution failed for task ':app:compileJava'.",
        "BUILD FAILED in 14s",
    ]
    return "\n".join(lines) + "\n", must


def dotnet_test(passing: int = 60) -> tuple[str, list[str]]:
    """dotnet test: restore/build chatter, one failed test with its stack, the totals line."""
    lines = [
        "  Determining projects to restore...",
        "  All projects are up-to-date for restore.",
        "  Shop.Domain -> /src/Shop.Domain/bin/Debug/net8.0/Shop.Domain.dll",
        "  Shop.Tests -> /src/Shop.Tests/bin/Debug/net8.0/Shop.Tests.dll",
        "Test run for /src/Shop.Tests/bin/Debug/net8.0/Shop.Tests.dll (.NETCoreApp,Version=v8.0)",
        "Microsoft (R) Test Execution Command Line Tool Version 17.9.0 (x64)",
        "Copyright (c) Microsoft Corporation.  All rights reserved.",
        "",
        "Starting test execution, please wait...",
        "A total of 1 test files matched the specified pattern.",
    ]
    lines += [f"  Passed Shop.Tests.PricingTests.Rounds_{n} [< 1 ms]" for n in range(passing)]
    failed = "  Failed Shop.Tests.CartTests.Total_includes_shipping [12 ms]"
    location = "   at Shop.Tests.CartTests.Total_includes_shipping() in /src/Shop.Tests/CartTests.cs:line 48"
    lines += [
        failed,
        "  Error Message:",
        "   Assert.Equal() Failure: Values differ",
        "Expected: 105.00",
        "Actual:   100.00",
        "  Stack Trace:",
        location,
        "   at System.RuntimeMethodHandle.InvokeMethod(Object target, Void** arguments, Signature sig, Boolean isConstructor)",
        "   at System.Reflection.MethodBaseInvoker.InvokeWithNoArgs(Object obj, BindingFlags invokeAttr)",
        "",
        f"Failed!  - Failed:     1, Passed:    {passing}, Skipped:     0, Total:    {passing + 1}, Duration: 212 ms - Shop.Tests.dll (net8.0)",
    ]
    must = [failed, "   Assert.Equal() Failure: Values differ", location, lines[-1]]
    return "\n".join(lines) + "\n", must


def terraform_error(resources: int = 30) -> tuple[str, list[str]]:
    """terraform plan: refresh chatter, then boxed Error/Warning blocks with ``on file line N`` locations."""
    lines = [f"aws_security_group_rule.ingress[{n}]: Refreshing state... [id=sgrule-{1000 + n}]" for n in range(resources)]
    lines += [
        "",
        "Planning failed. Terraform encountered an error while generating this plan.",
        "",
        "╷",
        "│ Warning: Argument is deprecated",
        "│ ",
        "│   with aws_s3_bucket.logs,",
        '│   on storage.tf line 14, in resource "aws_s3_bucket" "logs":',
        '│   14:   acl    = "log-delivery-write"',
        "│ ",
        "│ Use the aws_s3_bucket_acl resource instead",
        "╵",
        "╷",
        "│ Error: Reference to undeclared resource",
        "│ ",
        '│   on main.tf line 42, in resource "aws_instance" "web":',
        "│   42:   subnet_id = aws_subnet.private.id",
        "│ ",
        '│ A managed resource "aws_subnet" "private" has not been declared in the root module.',
        "╵",
    ]
    must = [
        "│ Warning: Argument is deprecated",
        '│   on storage.tf line 14, in resource "aws_s3_bucket" "logs":',
        "│ Error: Reference to undeclared resource",
        '│   on main.tf line 42, in resource "aws_instance" "web":',
    ]
    return "\n".join(lines) + "\n", must


def kubectl_describe_pod(mounts: int = 20) -> tuple[str, list[str]]:
    """kubectl describe pod: a long spec, then an Events table with warnings at the end."""
    lines = [
        "Name:             api-7d9f8b6c5-x2k4q",
        "Namespace:        shop",
        "Priority:         0",
        "Service Account:  api",
        "Node:             worker-2/10.0.3.12",
        "Start Time:       Mon, 30 Nov 2026 08:12:44 +0000",
        "Labels:           app=api",
        "                  pod-template-hash=7d9f8b6c5",
        "Status:           Running",
        "IP:               10.244.2.31",
        "Containers:",
        "  api:",
        "    Container ID:   containerd://4b1f0c9e2d",
        "    Image:          registry.example.com/shop/api:1.42.0",
        "    Port:           8080/TCP",
        "    State:          Waiting",
        "      Reason:       CrashLoopBackOff",
        "    Last State:     Terminated",
        "      Reason:       Error",
        "      Exit Code:    1",
        "    Ready:          False",
        "    Restart Count:  7",
        "    Environment:",
    ]
    lines += [f"      SETTING_{n}:  value-{n}" for n in range(mounts)]
    lines += ["    Mounts:"]
    lines += [f"      /etc/config/part-{n} from config-{n} (ro)" for n in range(mounts)]
    lines += [
        "Conditions:",
        "  Type              Status",
        "  Initialized       True",
        "  Ready             False",
        "  ContainersReady   False",
        "  PodScheduled      True",
        "Events:",
        "  Type     Reason     Age                  From               Message",
        "  ----     ------     ----                 ----               -------",
        "  Normal   Scheduled  14m                  default-scheduler  Successfully assigned shop/api-7d9f8b6c5-x2k4q to worker-2",
        '  Normal   Pulled     12m (x5 over 14m)    kubelet            Container image "registry.example.com/shop/api:1.42.0" already present on machine',
        '  Warning  Unhealthy  12m (x3 over 13m)    kubelet            Readiness probe failed: Get "http://10.244.2.31:8080/healthz": dial tcp 10.244.2.31:8080: connect: connection refused',
        "  Warning  BackOff    2m (x41 over 12m)    kubelet            Back-off restarting failed container api in pod api-7d9f8b6c5-x2k4q_shop",
    ]
    must = [lines[-2], lines[-1]]
    return "\n".join(lines) + "\n", must


def rspec_run(examples: int = 120) -> tuple[str, list[str]]:
    """rspec progress dots, a Failures block with its location, the totals and the rerun list."""
    dots = "." * (examples - 2) + "F*"
    lines = [dots[i : i + 80] for i in range(0, len(dots), 80)]
    lines += [
        "",
        "Pending: (Failures listed here are expected and do not affect your suite's status)",
        "",
        "  1) Invoice#pdf renders the logo",
        "     # Not yet implemented",
        "     # ./spec/models/invoice_spec.rb:30",
        "",
        "Failures:",
        "",
        "  1) Order#total applies the discount",
        "     Failure/Error: expect(order.total).to eq(90)",
        "",
        "       expected: 90",
        "            got: 100",
        "",
        "       (compared using ==)",
        "     # ./spec/models/order_spec.rb:14:in `block (3 levels) in <top (required)>'",
        "",
        "Finished in 3.21 seconds (files took 1.9 seconds to load)",
        f"{examples} examples, 1 failure, 1 pending",
        "",
        "Failed examples:",
        "",
        "rspec ./spec/models/order_spec.rb:12 # Order#total applies the discount",
    ]
    must = [
        "  1) Order#total applies the discount",
        "     Failure/Error: expect(order.total).to eq(90)",
        "     # ./spec/models/order_spec.rb:14:in `block (3 levels) in <top (required)>'",
        f"{examples} examples, 1 failure, 1 pending",
        "rspec ./spec/models/order_spec.rb:12 # Order#total applies the discount",
    ]
    return "\n".join(lines) + "\n", must


def npm_build_error(modules: int = 60) -> tuple[str, list[str]]:
    """A webpack build run through npm: module listing, one error with its location, npm's error tail."""
    lines = ["", "> shop-web@2.3.0 build", "> webpack --mode production", ""]
    lines += [f"  ./src/components/Part{n}.jsx {1 + n % 9}.{n % 10} KiB [built] [code generated]" for n in range(modules)]
    lines += [
        "",
        "ERROR in ./src/pages/Checkout.jsx 48:12",
        "Module parse failed: Unexpected token (48:12)",
        "You may need an appropriate loader to handle this file type.",
        "|   return (",
        "|     <Layout>",
        ">       <Summary total={total} />",
        "|     </Layout>",
        "",
        "webpack 5.91.0 compiled with 1 error in 8123 ms",
        "npm ERR! code 1",
        "npm ERR! path /home/dev/shop-web",
        "npm ERR! command failed",
        "npm ERR! command sh -c webpack --mode production",
        "",
        "npm ERR! A complete log of this run can be found in: /home/dev/.npm/_logs/2026-11-30T08_12_44_123Z-debug-0.log",
    ]
    must = [
        "ERROR in ./src/pages/Checkout.jsx 48:12",
        "Module parse failed: Unexpected token (48:12)",
        "webpack 5.91.0 compiled with 1 error in 8123 ms",
        "npm ERR! command failed",
    ]
    return "\n".join(lines) + "\n", must


def maven_test_failure(classes: int = 40) -> tuple[str, list[str]]:
    """mvn test: download and plugin chatter, surefire results, the failed test with its location."""
    lines = ["[INFO] Scanning for projects...", "[INFO] ", "[INFO] ---------------------< com.shop:orders >---------------------"]
    lines += [
        f"[INFO] Downloaded from central: https://repo.maven.apache.org/maven2/org/lib{n}/lib{n}/1.{n}/lib{n}-1.{n}.jar (12 kB at 140 kB/s)"
        for n in range(classes // 2)
    ]
    lines += ["[INFO] ", "[INFO] -------------------------------------------------------", "[INFO]  T E S T S"]
    lines += [f"[INFO] Running com.shop.orders.Test{n}" for n in range(classes)]
    lines += [
        f"[INFO] Tests run: {3 + n % 4}, Failures: 0, Errors: 0, Skipped: 0, Time elapsed: 0.0{n % 9} s -- in com.shop.orders.Test{n}"
        for n in range(classes)
    ]
    failure = "[ERROR] com.shop.orders.PricingTest.appliesVat -- Time elapsed: 0.012 s <<< FAILURE!"
    lines += [
        "[ERROR] Tests run: 4, Failures: 1, Errors: 0, Skipped: 0, Time elapsed: 0.031 s <<< FAILURE! -- in com.shop.orders.PricingTest",
        failure,
        "org.opentest4j.AssertionFailedError: expected: <119.00> but was: <100.00>",
        "\tat org.junit.jupiter.api.AssertionFailureBuilder.build(AssertionFailureBuilder.java:151)",
        "\tat org.junit.jupiter.api.AssertEquals.assertEquals(AssertEquals.java:197)",
        "\tat com.shop.orders.PricingTest.appliesVat(PricingTest.java:33)",
        "",
        "[INFO] ",
        "[INFO] Results:",
        "[INFO] ",
        "[ERROR] Failures: ",
        "[ERROR]   PricingTest.appliesVat:33 expected: <119.00> but was: <100.00>",
        "[INFO] ",
        "[ERROR] Tests run: 157, Failures: 1, Errors: 0, Skipped: 0",
        "[INFO] ",
        "[INFO] BUILD FAILURE",
    ]
    must = [
        failure,
        "org.opentest4j.AssertionFailedError: expected: <119.00> but was: <100.00>",
        "[ERROR]   PricingTest.appliesVat:33 expected: <119.00> but was: <100.00>",
        "[ERROR] Tests run: 157, Failures: 1, Errors: 0, Skipped: 0",
        "[INFO] BUILD FAILURE",
    ]
    return "\n".join(lines) + "\n", must


def docker_build_failure(steps: int = 30) -> tuple[str, list[str]]:
    """docker build (BuildKit): cached steps, a long apt log, a failing RUN with its exit code."""
    lines = ['#0 building with "default" instance using docker driver', "", "#1 [internal] load build definition from Dockerfile"]
    lines += ["#1 transferring dockerfile: 1.21kB done", "#1 DONE 0.0s"]
    lines += [
        f"#7 {1.0 + n / 10:.1f} Get:{n + 1} http://deb.debian.org/debian bookworm/main amd64 libpkg{n} amd64 1.{n}-1 [{40 + n} kB]"
        for n in range(steps)
    ]
    lines += [f"#7 {4.0 + n / 10:.1f} Setting up libpkg{n}:amd64 (1.{n}-1) ..." for n in range(steps)]
    lines += [
        "#7 DONE 9.8s",
        "",
        "#8 [5/7] RUN pip install --no-cache-dir -r requirements.txt",
        "#8 1.204 Collecting flask==3.0.2",
        "#8 2.311 ERROR: Could not find a version that satisfies the requirement torchx==9.9 (from versions: 0.1.0, 0.2.0)",
        "#8 2.312 ERROR: No matching distribution found for torchx==9.9",
        '#8 ERROR: process "/bin/sh -c pip install --no-cache-dir -r requirements.txt" did not complete successfully: exit code: 1',
        "------",
        " > [5/7] RUN pip install --no-cache-dir -r requirements.txt:",
        "------",
        "Dockerfile:9",
        "--------------------",
        "   8 |     COPY requirements.txt .",
        "   9 | >>> RUN pip install --no-cache-dir -r requirements.txt",
        "  10 |     COPY . .",
        "--------------------",
        'ERROR: failed to solve: process "/bin/sh -c pip install --no-cache-dir -r requirements.txt" did not complete successfully: exit code: 1',
    ]
    must = [
        "#8 2.311 ERROR: Could not find a version that satisfies the requirement torchx==9.9 (from versions: 0.1.0, 0.2.0)",
        "#8 2.312 ERROR: No matching distribution found for torchx==9.9",
        "Dockerfile:9",
        lines[-1],
    ]
    return "\n".join(lines) + "\n", must


def phpunit_run(tests: int = 200) -> tuple[str, list[str]]:
    """PHPUnit: progress rows with counts, one failure with its file:line, the FAILURES! tally."""
    dots = "." * (tests - 1) + "F"
    lines = ["PHPUnit 10.5.11 by Sebastian Bergmann and contributors.", "", "Runtime:       PHP 8.3.2", ""]
    for start in range(0, tests, 63):
        chunk = dots[start : start + 63]
        lines.append(f"{chunk:<63} {start + len(chunk):>3} / {tests} ({100 * (start + len(chunk)) // tests:>3}%)")
    lines += [
        "",
        "Time: 00:02.114, Memory: 24.00 MB",
        "",
        "There was 1 failure:",
        "",
        "1) Tests\\Unit\\CartTest::testTotalIncludesShipping",
        "Failed asserting that 100.0 matches expected 105.0.",
        "",
        "/app/tests/Unit/CartTest.php:42",
        "",
        "FAILURES!",
        f"Tests: {tests}, Assertions: {tests * 3}, Failures: 1.",
    ]
    must = [
        "1) Tests\\Unit\\CartTest::testTotalIncludesShipping",
        "Failed asserting that 100.0 matches expected 105.0.",
        "/app/tests/Unit/CartTest.php:42",
        "FAILURES!",
        lines[-1],
    ]
    return "\n".join(lines) + "\n", must


def app_log_crash(entries: int = 150) -> tuple[str, list[str]]:
    """A service log: timestamped INFO lines, a few WARN lines, then an ERROR with a traceback."""
    lines = [
        f"2026-11-30 08:{n // 60:02d}:{n % 60:02d},{n * 7 % 1000:03d} INFO  [worker-{n % 4}] shop.sync: synced batch {n} (48 items) in {20 + n % 30} ms"
        for n in range(entries)
    ]
    warn = "2026-11-30 08:02:31,044 WARN  [worker-2] shop.sync: retrying batch 151 after timeout (attempt 2/3)"
    error = "2026-11-30 08:02:33,512 ERROR [worker-2] shop.sync: batch 151 failed"
    lines += [
        warn,
        error,
        "Traceback (most recent call last):",
        '  File "/srv/shop/sync.py", line 88, in run_batch',
        "    response = client.post(url, json=payload, timeout=5)",
        '  File "/srv/shop/client.py", line 41, in post',
        "    raise UpstreamTimeout(url)",
        "shop.client.UpstreamTimeout: https://catalogue.internal/api/v2/items",
        "2026-11-30 08:02:33,520 INFO  [worker-2] shop.sync: worker stopping",
    ]
    must = [warn, error, "shop.client.UpstreamTimeout: https://catalogue.internal/api/v2/items"]
    return "\n".join(lines) + "\n", must


def unittest_run() -> tuple[str, list[str]]:
    """python -m unittest -v: ok lines, one FAIL block with its traceback, the Ran and FAILED totals."""
    text, must = (
        "\n".join(
            [f"test_ok_{i} (tests.test_math.MathTest.test_ok_{i}) ... ok" for i in range(80)]
            + [
                "test_div (tests.test_math.MathTest.test_div) ... FAIL",
                "",
                "======================================================================",
                "FAIL: test_div (tests.test_math.MathTest.test_div)",
                "----------------------------------------------------------------------",
                "Traceback (most recent call last):",
                '  File "/src/tests/test_math.py", line 14, in test_div',
                "    self.assertEqual(div(4, 2), 3)",
                "AssertionError: 2.0 != 3",
                "",
                "----------------------------------------------------------------------",
                "Ran 81 tests in 0.012s",
                "",
                "FAILED (failures=1)",
            ]
        )
        + "\n",
        [
            "FAIL: test_div (tests.test_math.MathTest.test_div)",
            '  File "/src/tests/test_math.py", line 14, in test_div',
            "AssertionError: 2.0 != 3",
            "Ran 81 tests in 0.012s",
            "FAILED (failures=1)",
        ],
    )
    return text, must


def pylint_run() -> tuple[str, list[str]]:
    """pylint: a module header, convention findings by the dozen, a warning, an error, the rating.

    The error is what fails the run: beside it, the warning is not a failure (a must line).
    """
    text, must = (
        "\n".join(
            ["************* Module shop.cart"]
            + [f"shop/cart.py:{10 + i}:0: C0301: Line too long ({101 + i}/100) (line-too-long)" for i in range(40)]
            + [
                "shop/cart.py:77:8: W0612: Unused variable 'total' (unused-variable)",
                "shop/cart.py:91:4: E1101: Instance of 'Cart' has no 'itemz' member (no-member)",
                "",
                "-----------------------------------",
                "Your code has been rated at 6.12/10 (previous run: 6.40/10, -0.28)",
                "",
            ]
        )
        + "\n",
        [
            "shop/cart.py:91:4: E1101: Instance of 'Cart' has no 'itemz' member (no-member)",
            "Your code has been rated at 6.12/10 (previous run: 6.40/10, -0.28)",
        ],
    )
    return text, must


def mix_run() -> tuple[str, list[str]]:
    """mix test (Elixir): dots, one numbered failure with its location and left/right, the totals."""
    text, must = (
        "\n".join(
            [
                "Compiling 12 files (.ex)",
                "Generated shop app",
                "." * 60,
                "",
                "  1) test adds numbers (Shop.MathTest)",
                "     test/shop/math_test.exs:5",
                "     Assertion with == failed",
                "     code:  assert Math.add(1, 1) == 3",
                "     left:  2",
                "     right: 3",
                "     stacktrace:",
                "       test/shop/math_test.exs:6: (test)",
                "",
                "." * 40,
                "",
                "Finished in 0.08 seconds (0.05s async, 0.03s sync)",
                "101 tests, 1 failure",
                "",
                "Randomized with seed 123456",
            ]
        )
        + "\n",
        [
            "  1) test adds numbers (Shop.MathTest)",
            "     test/shop/math_test.exs:5",
            "     Assertion with == failed",
            "101 tests, 1 failure",
        ],
    )
    return text, must


def mocha_run() -> tuple[str, list[str]]:
    """mocha: ✔ lines, the passing/failing totals, one failure with its assertion and first frame."""
    text, must = (
        "\n".join(
            ["", "  Array"]
            + [f"    ✔ handles case {i}" for i in range(70)]
            + [
                "    1) should return -1 when missing",
                "",
                "  70 passing (48ms)",
                "  1 failing",
                "",
                "  1) Array",
                "       should return -1 when missing:",
                "",
                "      AssertionError [ERR_ASSERTION]: 0 == -1",
                "      + expected - actual",
                "",
                "      -0",
                "      +-1",
                "",
                "      at Context.<anonymous> (test/array.test.js:12:14)",
                "      at process.processImmediate (node:internal/timers:478:21)",
                "",
            ]
        )
        + "\n",
        [
            "  70 passing (48ms)",
            "  1 failing",
            "      AssertionError [ERR_ASSERTION]: 0 == -1",
            "      at Context.<anonymous> (test/array.test.js:12:14)",
        ],
    )
    return text, must


def black_run() -> tuple[str, list[str]]:
    """black --check: one line per file it would reformat, then the verdict."""
    text, must = (
        "\n".join(
            [f"would reformat /src/shop/cart_{i}.py" for i in range(30)]
            + ["", "Oh no! 💥 💔 💥", "30 files would be reformatted, 112 files would be left unchanged."]
        )
        + "\n",
        ["30 files would be reformatted, 112 files would be left unchanged."],
    )
    return text, must


def hadolint_run() -> tuple[str, list[str]]:
    """hadolint: Dockerfile:LINE RULE severity: message findings."""
    text, must = (
        "\n".join(
            [
                f"Dockerfile:{3 + i} DL3008 warning: Pin versions in apt get install. Instead of `apt-get install <package>` use `apt-get install <package>=<version>`"
                for i in range(3)
            ]
            + [
                "Dockerfile:12 DL3025 warning: Use arguments JSON notation for CMD and ENTRYPOINT arguments",
                "Dockerfile:1 DL3006 warning: Always tag the version of an image explicitly",
            ]
        )
        + "\n",
        ["Dockerfile:12 DL3025 warning: Use arguments JSON notation for CMD and ENTRYPOINT arguments"],
    )
    return text, must


def make_gcc_run() -> tuple[str, list[str]]:
    """make running gcc: compile commands, a warning and an error with their code frames, make's verdict."""
    text, must = (
        "\n".join(
            [f"gcc -O2 -Wall -c src/mod{i}.c -o build/mod{i}.o" for i in range(60)]
            + [
                "src/net.c: In function 'connect_to':",
                "src/net.c:42:9: warning: unused variable 'rc' [-Wunused-variable]",
                "   42 |     int rc;",
                "      |         ^~",
                "src/net.c:57:12: error: 'sock' undeclared (first use in this function)",
                "   57 |     return sock;",
                "      |            ^~~~",
                "make: *** [Makefile:14: build/net.o] Error 1",
            ]
        )
        + "\n",
        [
            "src/net.c:42:9: warning: unused variable 'rc' [-Wunused-variable]",
            "src/net.c:57:12: error: 'sock' undeclared (first use in this function)",
            "make: *** [Makefile:14: build/net.o] Error 1",
        ],
    )
    return text, must


def shellcheck_run() -> tuple[str, list[str]]:
    """shellcheck (tty format): "In file line N:" blocks with ^-- SCxxxx (severity) notes."""
    text, must = (
        "\n".join(
            sum(
                [
                    [
                        "",
                        f"In deploy.sh line {10 + i}:",
                        "cp $SRC /opt/app",
                        "   ^--^ SC2086 (info): Double quote to prevent globbing and word splitting.",
                        "",
                        "Did you mean: ",
                        'cp "$SRC" /opt/app',
                    ]
                    for i in range(12)
                ],
                [],
            )
            + [
                "",
                "In deploy.sh line 40:",
                "if [ $x = 1 ]",
                "^-- SC1009 (error): The mentioned syntax error was in this if expression.",
                "",
                "For more information:",
                "  https://www.shellcheck.net/wiki/SC2086 -- Double quote to prevent globbing ...",
            ]
        )
        + "\n",
        ["In deploy.sh line 40:", "^-- SC1009 (error): The mentioned syntax error was in this if expression."],
    )
    return text, must


def kubectl_get_run() -> tuple[str, list[str]]:
    """kubectl get pods: a table of running pods with two failing ones among them."""
    text, must = (
        "\n".join(
            ["NAME                          READY   STATUS             RESTARTS   AGE"]
            + [f"web-{i:03d}-5d8f7c9b4-abcde      1/1     Running            0          3d" for i in range(60)]
            + [
                "api-7d9f8b6c5-x2k4q           0/1     CrashLoopBackOff   7          14m",
                "worker-6c8d9f7b5-qwert        0/1     Error              3          10m",
            ]
            + [f"cron-{i:03d}-27983410-zzzzz   0/1     Completed          0          {i}h" for i in range(20)]
        )
        + "\n",
        [
            "api-7d9f8b6c5-x2k4q           0/1     CrashLoopBackOff   7          14m",
            "worker-6c8d9f7b5-qwert        0/1     Error              3          10m",
        ],
    )
    return text, must


def minitest_run() -> tuple[str, list[str]]:
    """minitest: dots, one Failure with its location in brackets, the totals."""
    text, must = (
        "\n".join(
            [
                "Run options: --seed 4321",
                "",
                "# Running:",
                "",
                "." * 70 + "F" + "." * 30,
                "",
                "Finished in 0.412s, 245.1 runs/s, 610.2 assertions/s.",
                "",
                "  1) Failure:",
                "OrderTest#test_total [test/models/order_test.rb:14]:",
                "Expected: 90",
                "  Actual: 100",
                "",
                "101 runs, 251 assertions, 1 failures, 0 errors, 0 skips",
            ]
        )
        + "\n",
        [
            "  1) Failure:",
            "OrderTest#test_total [test/models/order_test.rb:14]:",
            "101 runs, 251 assertions, 1 failures, 0 errors, 0 skips",
        ],
    )
    return text, must


def ansible_run() -> tuple[str, list[str]]:
    """ansible-playbook: ok/changed lines per host, one fatal task, the PLAY RECAP rows."""
    text, must = (
        "\n".join(
            [
                "",
                "PLAY [web] *********************************************************************",
                "",
                "TASK [Gathering Facts] *********************************************************",
            ]
            + [f"ok: [web{i:02d}]" for i in range(30)]
            + ["", "TASK [install nginx] ***********************************************************"]
            + [f"changed: [web{i:02d}]" for i in range(29)]
            + [
                'fatal: [web29]: FAILED! => {"changed": false, "msg": "No package matching \'nginx\' is available"}',
                "",
                "PLAY RECAP *********************************************************************",
            ]
            + [
                f"web{i:02d}                      : ok=2    changed=1    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0"
                for i in range(29)
            ]
            + [
                "web29                      : ok=1    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0"
            ]
        )
        + "\n",
        [
            'fatal: [web29]: FAILED! => {"changed": false, "msg": "No package matching \'nginx\' is available"}',
            "web29                      : ok=1    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0",
        ],
    )
    return text, must


def eslint_compact_run() -> tuple[str, list[str]]:
    """eslint --format compact: one finding per line with "line N, col M, Severity -"."""
    text, must = (
        "\n".join(
            [
                f"/src/web/components/Part{i}.js: line {3 + i}, col 5, Warning - Unexpected console statement. (no-console)"
                for i in range(25)
            ]
            + ["/src/web/api/client.js: line 12, col 9, Error - 'fetchJson' is not defined. (no-undef)", "", "26 problems"]
        )
        + "\n",
        ["/src/web/api/client.js: line 12, col 9, Error - 'fetchJson' is not defined. (no-undef)", "26 problems"],
    )
    return text, must


def tf_plan_run() -> tuple[str, list[str]]:
    """terraform plan that succeeds: refresh chatter, the planned change, the Plan: totals."""
    text, must = (
        "\n".join(
            [f"aws_iam_policy.p[{i}]: Refreshing state... [id=arn:aws:iam::123:policy/p{i}]" for i in range(50)]
            + [
                "",
                "Terraform will perform the following actions:",
                "",
                "  # aws_instance.web will be created",
                '  + resource "aws_instance" "web" {',
                '      + ami           = "ami-123"',
                '      + instance_type = "t3.micro"',
                "    }",
                "",
                "Plan: 1 to add, 0 to change, 0 to destroy.",
            ]
        )
        + "\n",
        ["Plan: 1 to add, 0 to change, 0 to destroy."],
    )
    return text, must


def npm_audit_run() -> tuple[str, list[str]]:
    """npm audit: one advisory block per package with its severity, then the total."""
    text, must = (
        "\n".join(
            [
                "# npm audit report",
                "",
                "lodash  <4.17.21",
                "Severity: high",
                "Prototype Pollution in lodash - https://github.com/advisories/GHSA-p6mc-m468-83gw",
                "fix available via `npm audit fix`",
                "node_modules/lodash",
                "",
            ]
            + sum(
                [
                    [
                        f"pkg{i}  <1.{i}.0",
                        "Severity: moderate",
                        f"ReDoS in pkg{i} - https://github.com/advisories/GHSA-xxxx-{i:04d}",
                        "fix available via `npm audit fix`",
                        f"node_modules/pkg{i}",
                        "",
                    ]
                    for i in range(15)
                ],
                [],
            )
            + ["16 vulnerabilities (15 moderate, 1 high)", "", "To address all issues, run:", "  npm audit fix"]
        )
        + "\n",
        ["Severity: high", "16 vulnerabilities (15 moderate, 1 high)"],
    )
    return text, must


def tap_run(passing: int = 60) -> tuple[str, list[str]]:
    """node --test (TAP): YAML blocks per test point, failures amid passing tests, the ``# fail`` tally."""

    def ok(n: int) -> list[str]:
        return [f"# Subtest: total of cart {n}", f"ok {n} - total of cart {n}", "  ---", f"  duration_ms: 0.{n + 11}", "  ..."]

    def stack(indent: str, row: int) -> list[str]:
        return [
            f"{indent}stack: |-",
            f"{indent}  TestContext.<anonymous> (file:///srv/shop/test/cart.test.mjs:{row}:45)",
            f"{indent}  Test.runInAsyncScope (node:async_hooks:206:9)",
            f"{indent}  Test.run (node:internal/test_runner/test:796:25)",
            f"{indent}  Test.processPendingSubtests (node:internal/test_runner/test:526:18)",
            f"{indent}  Test.postRun (node:internal/test_runner/test:889:19)",
            f"{indent}...",
        ]

    half = passing // 2
    first, second = half + 1, half + 2
    lines = ["TAP version 13", *itertools.chain.from_iterable(ok(n) for n in range(1, half + 1))]
    lines += [
        "# Subtest: rejects a negative quantity",
        f"not ok {first} - rejects a negative quantity",
        "  ---",
        "  duration_ms: 10.703741",
        "  location: '/srv/shop/test/cart.test.mjs:8:1'",
        "  failureType: 'testCodeFailure'",
        "  error: 'Missing expected exception.'",
        "  code: 'ERR_ASSERTION'",
        "  name: 'AssertionError'",
        "  operator: 'throws'",
        *stack("  ", 8),
        "# Subtest: rounding",
        "    # Subtest: rounds half up",
        "    not ok 1 - rounds half up",
        "      ---",
        "      duration_ms: 21.546483",
        "      location: '/srv/shop/test/cart.test.mjs:10:11'",
        "      failureType: 'testCodeFailure'",
        "      error: |-",
        "        Expected values to be strictly deep-equal:",
        "        + actual - expected",
        "      code: 'ERR_ASSERTION'",
        "      name: 'AssertionError'",
        *stack("      ", 10),
        "    1..1",
        f"not ok {second} - rounding",
        "  ---",
        "  duration_ms: 22.790856",
        "  location: '/srv/shop/test/cart.test.mjs:9:1'",
        "  failureType: 'subtestsFailed'",
        "  error: '1 subtest failed'",
        "  code: 'ERR_TEST_FAILURE'",
        "  ...",
        *itertools.chain.from_iterable(ok(n) for n in range(second + 1, passing + 3)),
        f"1..{passing + 2}",
        f"# tests {passing + 3}",
        "# suites 0",
        f"# pass {passing}",
        "# fail 3",
        "# cancelled 0",
        "# duration_ms 1648.5",
    ]
    must = [
        f"not ok {first} - rejects a negative quantity",
        "  location: '/srv/shop/test/cart.test.mjs:8:1'",
        "  error: 'Missing expected exception.'",
        "    not ok 1 - rounds half up",
        "      location: '/srv/shop/test/cart.test.mjs:10:11'",
        f"not ok {second} - rounding",
        "# fail 3",
    ]
    return "\n".join(lines) + "\n", must


def ruff_full_run(files: int = 20) -> tuple[str, list[str]]:
    """ruff check, default (full) format: ``CODE message`` with the location on a ``-->`` line under it."""
    lines: list[str] = []
    for n in range(files):
        for code, text, row in (
            ("UP035", "`typing.List` is deprecated, use `list` instead", 3),
            ("UP006", "Use `list` instead of `List` for type annotation", 6),
        ):
            lines += [
                f"{code} [*] {text}",
                f" --> app/mod{n}.py:{row}:1",
                "  |",
                f"{row} | from typing import List",
                "  | ^^^^^^^^^^^^^^^^^^^^^^^",
                "  |",
                "help: Replace with `list`",
                "",
            ]
    lines += [
        "F821 Undefined name `undefined_name`",
        "  --> app/cart.py:22:13",
        "   |",
        "21 |     def bad(self):",
        "22 |         x = undefined_name",
        "   |             ^^^^^^^^^^^^^^",
        "   |",
        "",
        "F841 Local variable `x` is assigned to but never used",
        "  --> app/cart.py:22:9",
        "   |",
        "22 |         x = undefined_name",
        "   |         ^",
        "   |",
        "help: Remove assignment to unused variable `x`",
        "",
        f"Found {2 * files + 2} errors.",
        f"[*] {2 * files} fixable with the `--fix` option.",
    ]
    must = [
        "F821 Undefined name `undefined_name`",
        "  --> app/cart.py:22:13",
        "F841 Local variable `x` is assigned to but never used",
        "  --> app/cart.py:22:9",
        f"Found {2 * files + 2} errors.",
    ]
    return "\n".join(lines) + "\n", must


def valgrind_run() -> tuple[str, list[str]]:
    """valgrind memcheck: every line behind a ``==pid==`` rail; errors open stacks of ``at``/``by`` frames."""
    body = [
        "Memcheck, a memory error detector",
        "Copyright (C) 2002-2022, and GNU GPL'd, by Julian Seward et al.",
        "Using Valgrind-3.19.0 and LibVEX; rerun with -h for copyright info",
        "Command: ./orders --batch 40",
        "",
        "Invalid write of size 8",
        "   at 0x10917A: parse_order (orders.c:88)",
        "   by 0x1092B0: main (main.c:31)",
        " Address 0x4a41046 is 6 bytes inside a block of size 10 alloc'd",
        "   at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)",
        "   by 0x10915A: parse_order (orders.c:80)",
        "",
        "Conditional jump or move depends on uninitialised value(s)",
        "   at 0x109199: total (orders.c:120)",
        "   by 0x1092C4: main (main.c:33)",
        "",
        "HEAP SUMMARY:",
        "    in use at exit: 40 bytes in 1 blocks",
        "  total heap usage: 2 allocs, 1 frees, 50 bytes allocated",
        "",
        "40 bytes in 1 blocks are definitely lost in loss record 1 of 1",
        "   at 0x48417B4: malloc (in /usr/libexec/valgrind/vgpreload_memcheck-amd64-linux.so)",
        "   by 0x109187: load_rates (rates.c:12)",
        "   by 0x1092D0: main (main.c:35)",
        "",
        "LEAK SUMMARY:",
        "   definitely lost: 40 bytes in 1 blocks",
        "   indirectly lost: 0 bytes in 0 blocks",
        "     possibly lost: 0 bytes in 0 blocks",
        "   still reachable: 0 bytes in 0 blocks",
        "        suppressed: 0 bytes in 0 blocks",
        "",
        "Use --track-origins=yes to see where uninitialised values come from",
        "For lists of detected and suppressed errors, rerun with: -s",
        "ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)",
    ]
    program = [f"order {n:04d} priced at {(n * 37) % 900}.{n % 100:02d} EUR, {n % 7} items" for n in range(120)]
    text = "\n".join(program + [f"==4021== {line}".rstrip() for line in body]) + "\n"
    must = [
        "==4021== Invalid write of size 8",
        "==4021==    at 0x10917A: parse_order (orders.c:88)",
        "==4021== Conditional jump or move depends on uninitialised value(s)",
        "==4021==    at 0x109199: total (orders.c:120)",
        "==4021== 40 bytes in 1 blocks are definitely lost in loss record 1 of 1",
        "==4021==    definitely lost: 40 bytes in 1 blocks",
        "==4021== ERROR SUMMARY: 3 errors from 3 contexts (suppressed: 0 from 0)",
    ]
    return text, must


def cmake_error() -> tuple[str, list[str]]:
    """cmake configure: compiler checks, then ``CMake Error at file:line`` with its message on the next lines."""
    checks = [
        f"-- {what} - done" if n % 2 else f"-- {what}"
        for n, what in enumerate(
            f"{step} {lang} compiler {part}"
            for lang in ("C", "CXX")
            for step, part in (("Detecting", "ABI info"), ("Detecting", "ABI info"), ("Check for working", "- skipped"))
            for _ in range(4)
        )
    ]
    lines = [
        "-- The C compiler identification is GNU 12.2.0",
        "-- The CXX compiler identification is GNU 12.2.0",
        *checks,
        "CMake Error at /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:230 (message):",
        "  Could NOT find Boost (missing: Boost_INCLUDE_DIR filesystem) (Required is",
        '  at least version "1.80")',
        "Call Stack (most recent call first):",
        "  /usr/share/cmake-3.25/Modules/FindPackageHandleStandardArgs.cmake:600 (_FPHSA_FAILURE_MESSAGE)",
        "  /usr/share/cmake-3.25/Modules/FindBoost.cmake:2376 (find_package_handle_standard_args)",
        "  CMakeLists.txt:3 (find_package)",
        "",
        "",
        "-- Configuring incomplete, errors occurred!",
        'See also "/srv/shop/build/CMakeFiles/CMakeOutput.log".',
    ]
    must = [
        lines[len(checks) + 2],
        lines[len(checks) + 3],
        "  CMakeLists.txt:3 (find_package)",
        "-- Configuring incomplete, errors occurred!",
    ]
    return "\n".join(lines) + "\n", must


def doctest_verbose_run(functions: int = 18) -> tuple[str, list[str]]:
    """python -m doctest -v: ``Trying:``/``Expecting:``/``ok`` per example; failures show ``Expected:``/``Got:`` blocks."""
    lines: list[str] = []
    must: list[str] = []
    failures = {3: ("'12.50 EUR'", "'12.5 EUR'"), 9: ("[2, 3]", "[3, 2]"), 14: ("True", "False")}
    for n in range(functions):
        for k in range(4):
            call = f"price_{n}({k * 3 + n}, rate=0.{k + 1})"
            want = f"{(k * 3 + n) * (k + 1) / 10:.2f}"
            lines += ["Trying:", f"    {call}", "Expecting:", f"    {want}"]
            if k == 2 and n in failures:
                expected, got = failures[n]
                block = [
                    "*" * 70,
                    f'File "/srv/shop/pricing.py", line {40 + 12 * n + k}, in pricing.price_{n}',
                    "Failed example:",
                    f"    {call}",
                    "Expected:",
                    f"    {expected}",
                    "Got:",
                    f"    {got}",
                ]
                lines += block
                must += block[1:]
            elif k == 3 and n == 6:
                block = [
                    "*" * 70,
                    f'File "/srv/shop/pricing.py", line {40 + 12 * n + k}, in pricing.price_{n}',
                    "Failed example:",
                    f"    {call}",
                    "Exception raised:",
                    "    Traceback (most recent call last):",
                    '      File "/usr/lib/python3.11/doctest.py", line 1351, in __run',
                    '        exec(compile(example.source, filename, "single",',
                    '      File "<doctest pricing.price_6[3]>", line 1, in <module>',
                    f"        {call}",
                    '      File "/srv/shop/pricing.py", line 118, in price_6',
                    "        return round(amount / rate_table[currency], 2)",
                    "    KeyError: 'EUR'",
                ]
                lines += block
                must += [*block[1:6], block[-1]]
            else:
                lines.append("ok")
    passed = [n for n in range(functions) if n not in failures and n != 6]
    lines.append(f"{len(passed) + 1} items passed all tests:")
    lines += ["   1 tests in pricing", *[f"   4 tests in pricing.price_{n}" for n in passed]]
    tail = [
        "*" * 70,
        "4 items had failures:",
        *[f"   1 of   4 in pricing.price_{n}" for n in sorted([*failures, 6], key=str)],
        f"{4 * functions + 1} tests in {functions + 1} items.",
        f"{4 * functions - 3} passed and 4 failed.",
        "***Test Failed*** 4 failures.",
    ]
    lines += tail
    must += tail[1:]
    return "\n".join(lines) + "\n", must


def gdb_recursion_backtrace(depth: int = 300) -> tuple[str, list[str]]:
    """gdb -batch -ex run -ex bt: a crash deep in a recursion; the frames that started it sit at the far end."""
    lines = [
        "[Thread debugging using libthread_db enabled]",
        'Using host libthread_db library "/lib/x86_64-linux-gnu/libthread_db.so.1".',
        "loading catalogue: 5120 entries",
        "",
        "Program received signal SIGSEGV, Segmentation fault.",
        f"0x0000555555555231 in visit (node=0x0, level={depth}) at tree.c:27",
        "27\t    if (node->left == NULL && node->right == NULL) return node->weight;",
        f"#0  0x0000555555555231 in visit (node=0x0, level={depth}) at tree.c:27",
    ]
    for n in range(1, depth + 1):
        lines.append(f"#{n:<3} 0x000055555555527e in visit (node=0x5555555{n:05x}a0, level={depth - n}) at tree.c:31")
    lines += [
        f"#{depth + 1:<3} 0x00005555555552f4 in balance (root=0x5555555592a0, limit=64) at tree.c:58",
        f"#{depth + 2:<3} 0x0000555555555402 in main (argc=2, argv=0x7fffffffe5f8) at main.c:19",
        "No symbol table info available.",
        "rax            0x0                 0",
        "rip            0x555555555231      0x555555555231 <visit+24>",
    ]
    must = [lines[4], lines[5], lines[7], lines[-5], lines[-4]]
    return "\n".join(lines) + "\n", must


def gcc_warning_flood(functions: int = 45) -> tuple[str, list[str]]:
    """gcc -Wall -Wextra on one file: hundreds of warnings, each with its quoted source line and caret."""
    lines: list[str] = []
    must: list[str] = []
    for n in range(functions):
        base = 10 + 9 * n
        lines.append(f"codec.c: In function \u2018decode_{n}\u2019:")
        found = [
            (
                f"codec.c:{base + 2}:15: warning: comparison of integer expressions of different signedness: "
                "\u2018int\u2019 and \u2018size_t\u2019 {aka \u2018long unsigned int\u2019} [-Wsign-compare]",
                f"   {base + 2} |     for (i = 0; i < len; i++) {{",
                "      |               ^",
            ),
            (
                f"codec.c:{base + 4}:13: warning: suggest parentheses around assignment used as truth value [-Wparentheses]",
                f"   {base + 4} |         if (c = buf[i]) out[i] = c ^ key;",
                "      |             ^",
            ),
            (
                f"codec.c:{base}:40: warning: unused parameter \u2018flags_{n}\u2019 [-Wunused-parameter]",
                f"   {base} | int decode_{n}(const char *buf, int len, int flags_{n}) {{",
                "      |                                    ~~~~^~~~~~~",
            ),
        ]
        for finding in found:
            lines += finding
            must.append(finding[0])
    lines.append("codec.c:3:12: note: \u2018key\u2019 declared here")
    return "\n".join(lines) + "\n", must


def strace_failed_run(lookups: int = 40) -> tuple[str, list[str]]:
    """strace -f: every line starts with a pid and names paths; the child's failure is near the end."""
    lines = [
        '7301 execve("/usr/bin/sh", ["sh", "-c", "deploy --check"], 0x7ffd2c1a9b58 /* 31 vars */) = 0',
        '7301 access("/etc/ld.so.preload", R_OK) = -1 ENOENT (No such file or directory)',
        '7301 openat(AT_FDCWD, "/etc/ld.so.cache", O_RDONLY|O_CLOEXEC) = 3',
        "7301 close(3)                          = 0",
    ]
    for n in range(lookups):
        lines += [
            f'7301 newfstatat(AT_FDCWD, "/opt/tools/v{n}/bin/deploy", 0x7ffd2c1a8e40, 0) = -1 ENOENT (No such file or directory)',
            "7301 rt_sigprocmask(SIG_BLOCK, ~[RTMIN RT_1], [], 8) = 0",
        ]
    lines += [
        "7301 clone(child_stack=NULL, flags=CLONE_CHILD_CLEARTID|CLONE_CHILD_SETTID|SIGCHLD, child_tidptr=0x7f3e1c2a0a10) = 7302",
        '7302 execve("/usr/local/bin/deploy", ["deploy", "--check"], 0x55d0c3b6e2a8 /* 31 vars */) = 0',
        *[
            call
            for part in ("CTYPE", "NUMERIC", "TIME", "COLLATE", "MONETARY", "MESSAGES", "PAPER", "NAME")
            for call in (
                f'7302 openat(AT_FDCWD, "/usr/lib/locale/C.utf8/LC_{part}", O_RDONLY|O_CLOEXEC) = 3',
                "7302 fstat(3, {st_mode=S_IFREG|0644, st_size=258, ...}) = 0",
                "7302 mmap(NULL, 258, PROT_READ, MAP_PRIVATE, 3, 0) = 0x7f3e1c4b1000",
                "7302 close(3)                          = 0",
            )
        ],
        '7302 openat(AT_FDCWD, "/etc/deploy/targets.yml", O_RDONLY) = -1 EACCES (Permission denied)',
        '7302 write(2, "deploy: cannot read /etc/deploy/targets.yml: Permission denied\\n", 63) = 63',
        "7302 exit_group(3)                     = ?",
        "7302 +++ exited with 3 +++",
        "7301 --- SIGCHLD {si_signo=SIGCHLD, si_code=CLD_EXITED, si_pid=7302, si_uid=1000, si_status=3, si_utime=0, si_stime=0} ---",
        "7301 exit_group(3)                     = ?",
        "7301 +++ exited with 3 +++",
    ]
    must = [lines[-1]]
    return "\n".join(lines) + "\n", must


def javac_lint_run(methods: int = 24) -> tuple[str, list[str]]:
    """javac -Xlint:all: ``File.java:N: warning:`` with the source line, a caret and notes; errors name the symbol.

    javac fails on its errors only (no ``-Werror``): beside them the lint warnings are not
    failures of the run, so their lines are not must lines; the warning total is.
    """
    lines: list[str] = []
    must: list[str] = []
    errors = 0
    for n in range(methods):
        row = 4 + 2 * n
        source = f'    static Map rates{n}() {{ Map m = new HashMap(); m.put("r{n}", {n}); return m; }}'
        for column, what in ((11, "found raw type: Map"), (30, "found raw type: HashMap")):
            finding = f"Billing.java:{row}: warning: [rawtypes] {what}"
            lines += [
                finding,
                source,
                " " * column + "^",
                f"  missing type arguments for generic class {what.rsplit(' ', 1)[-1]}<K,V>",
                "  where K,V are type-variables:",
                f"    K extends Object declared in class {what.rsplit(' ', 1)[-1]}",
            ]
        if n % 8 == 3:
            errors += 1
            finding = f"Billing.java:{row + 1}: error: cannot find symbol"
            block = [
                finding,
                f"    static long fee{n}(Object o) {{ return ((String) o).length() * feeRate{n}; }}",
                " " * 53 + "^",
                f"  symbol:   variable feeRate{n}",
                "  location: class Billing",
            ]
            lines += block
            must += [finding, block[3]]
    lines += [f"{errors} errors", f"{2 * methods} warnings"]
    must += lines[-2:]
    return "\n".join(lines) + "\n", must


def node_test_tap_run(passing: int = 40) -> tuple[str, list[str]]:
    """node --test with its TAP reporter: YAML blocks under each test point; a failure's message sits under ``error: |-``."""
    lines = ["TAP version 13", "# Subtest: invoice"]
    for n in range(passing):
        lines += [
            f"    # Subtest: rounds line {n}",
            f"    ok {n + 1} - rounds line {n}",
            "      ---",
            f"      duration_ms: {0.04 + n / 1000:.6f}",
            "      ...",
        ]
    failed = [
        f"    not ok {passing + 1} - applies the reduced rate",
        "      ---",
        "      duration_ms: 1.207311",
        "      location: '/home/ci/invoice/test/rates.test.mjs:31:3'",
        "      failureType: 'testCodeFailure'",
        "      error: |-",
        "        Expected values to be strictly equal:",
        "        ",
        "        0.19 !== 0.07",
        "        ",
        "      code: 'ERR_ASSERTION'",
        "      name: 'AssertionError'",
        "      stack: |-",
        "        TestContext.<anonymous> (file:///home/ci/invoice/test/rates.test.mjs:33:12)",
        "        Test.runInAsyncScope (node:async_hooks:206:9)",
        "        Test.run (node:internal/test_runner/test:796:25)",
        "      ...",
    ]
    lines += ["    # Subtest: applies the reduced rate", *failed, f"    1..{passing + 1}"]
    summary = ["not ok 1 - invoice", "# tests " + str(passing + 1), "# pass " + str(passing), "# fail 1"]
    lines += [summary[0], "  ---", "  error: '1 subtest failed'", "  ...", "1..1", *summary[1:]]
    must = [failed[0], failed[3], failed[5], failed[8], failed[13], *summary]
    return "\n".join(lines) + "\n", must


UNSEEN = {
    "ansible_run": ansible_run,
    "app_log_crash": app_log_crash,
    "black_run": black_run,
    "cmake_error": cmake_error,
    "cargo_build_error": cargo_build_error,
    "docker_build_failure": docker_build_failure,
    "doctest_verbose_run": doctest_verbose_run,
    "dotnet_test": dotnet_test,
    "eslint_compact_run": eslint_compact_run,
    "eslint_warnings": eslint_warnings,
    "gcc_warning_flood": gcc_warning_flood,
    "gdb_recursion_backtrace": gdb_recursion_backtrace,
    "go_vet": go_vet,
    "gradle_compile_failure": gradle_compile_failure,
    "hadolint_run": hadolint_run,
    "javac_lint_run": javac_lint_run,
    "jest_summary": jest_summary,
    "kubectl_describe_pod": kubectl_describe_pod,
    "kubectl_get_run": kubectl_get_run,
    "make_gcc_run": make_gcc_run,
    "maven_test_failure": maven_test_failure,
    "minitest_run": minitest_run,
    "mix_run": mix_run,
    "mocha_run": mocha_run,
    "mypy_run": mypy_run,
    "node_test_tap_run": node_test_tap_run,
    "npm_audit_run": npm_audit_run,
    "npm_build_error": npm_build_error,
    "phpunit_run": phpunit_run,
    "pylint_run": pylint_run,
    "reek_report": reek_report,
    "rspec_run": rspec_run,
    "rubocop_progress": rubocop_progress,
    "ruff_full_run": ruff_full_run,
    "shellcheck_run": shellcheck_run,
    "strace_failed_run": strace_failed_run,
    "tap_run": tap_run,
    "terraform_error": terraform_error,
    "tf_plan_run": tf_plan_run,
    "tsc_pretty": tsc_pretty,
    "unittest_run": unittest_run,
    "valgrind_run": valgrind_run,
}
"""Every builder, by name; each output is a failed run (``--exit-code 1``)."""
