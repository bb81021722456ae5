//! `paraclick`: run, check, draw and document Click configurations.
//!
//! The command line is this library's [`main_cli`] (the `paraclick`
//! binary is one call of it); a program that `paraclick build` wrote runs
//! [`run_built`] with its configuration and compiled entries.

mod align;
mod aot;
mod bench;
pub mod built;
mod capture_pipe;
mod combine;
mod ctl;
mod flat;
mod harness;
mod make_ip_conf;
mod metrics;
mod stop_watch;
mod substrate_bench;
mod undead;
mod validate;
mod web;
mod xform;

use paraclick_tune::{hop, mlffr, parallelize, profile};

use clap::{Arg, ArgAction, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use paraclick_lang::{
    parse_config_with, render, Diagnostic, FilePolicy, ParseOptions, Source, SourceSet,
};
use paraclick_runtime::hot::Hot;
use paraclick_runtime::sched::SchedPolicy;
use paraclick_runtime::{BuildOptions, Registry, Router};
use std::io::Write;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "paraclick",
    version,
    about = "A modular, multicore software router configured in the Click language",
    disable_help_flag = true,
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    cmd: Option<Cmd>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Args, Clone)]
struct Input {
    /// Read the configuration from FILE ("-" for standard input).
    #[arg(short = 'f', long = "file")]
    file: Option<String>,
    /// Use EXPR as the configuration.
    #[arg(short = 'e', long = "expression")]
    expr: Option<String>,
    /// Look for require(library FILE) files in PATH (colon-separated
    /// directories, each also with its conf/ subdirectory), as Click's -C;
    /// default: the CLICKPATH environment variable.
    #[arg(short = 'C', long = "clickpath", value_name = "PATH")]
    clickpath: Option<String>,
    /// Refuse a configuration that expands to more than N elements
    /// (compound instances included) or 4N connections, with an error
    /// located at the compound use that goes beyond. A hotconfig gets
    /// the same bound.
    #[arg(long = "max-elements", value_name = "N", default_value_t = paraclick_lang::DEFAULT_MAX_ELEMENTS)]
    max_elements: usize,
    // Help texts with square brackets are attributes, not doc comments,
    // where rustdoc would read the brackets as links.
    #[arg(help = "[FILE] [NAME=VALUE ...]: the configuration file and define() overrides")]
    args: Vec<String>,
}

impl Input {
    fn parse_options(&self) -> ParseOptions {
        ParseOptions {
            clickpath: self.clickpath.clone(),
            max_elements: self.max_elements,
            ..ParseOptions::default()
        }
    }
}

#[derive(Args)]
struct RunArgs {
    #[command(flatten)]
    input: Input,
    /// After the run, print the value of read handler ELEMENT.HANDLER (repeatable).
    #[arg(short = 'h', long = "handler", value_name = "ELEMENT.HANDLER")]
    handlers: Vec<String>,
    /// Initialize the router and quit without running it.
    #[arg(short = 'q', long = "quit")]
    quit: bool,
    /// Worker threads.
    #[arg(short = 'j', long = "threads", default_value_t = 1, value_parser = parse_threads)]
    threads: usize,
    /// Placement of tasks not pinned by StaticThreadSched: adaptive (tasks
    /// meeting at a queue start on one thread; a split that crosses a
    /// queue is kept only if it measured faster; work leaves a worker not
    /// getting its core), spread (round-robin start, then balanced by
    /// load alone: the adaptive scheduler before 2026-11-29), static or
    /// round-robin (round-robin, never moved).
    #[arg(long = "sched", default_value = "adaptive")]
    sched: String,
    /// Print a report after the run: costs (cycles per packet per element
    /// and task; enables sampling on every hop), threads, drops (repeatable).
    #[arg(long = "report", value_name = "KIND")]
    report: Vec<String>,
    /// Trace the first N packets that enter the router (those matching
    /// --trace-filter if given) and print their paths after the run (the
    /// control socket's `trace_add`; see `paraclick ctl trace`).
    #[arg(long = "trace", value_name = "N")]
    trace: Option<u32>,
    /// With --trace: trace only packets matching this IPFilter/tcpdump
    /// expression where they enter.
    #[arg(long = "trace-filter", value_name = "EXPR", requires = "trace")]
    trace_filter: Option<String>,
    /// Packet buffers per thread pool.
    #[arg(long = "pool", value_name = "BUFFERS")]
    pool: Option<usize>,
    /// Do not pin worker threads to CPUs. By default, with more than one
    /// worker, worker N is pinned to the Nth CPU the process may use (see
    /// taskset); a single worker, or more workers than CPUs, are left to
    /// the kernel, which can move them away from a busy CPU.
    #[arg(long = "no-pin", conflicts_with = "pin")]
    no_pin: bool,
    /// Pin the workers to CPUs even with one thread (-j 1) or more
    /// threads than CPUs (worker N to the Nth CPU, round robin).
    #[arg(long = "pin")]
    pin: bool,
    /// Open a control socket (Click's ControlSocket protocol) on TCP PORT of
    /// 127.0.0.1, or on ADDRESS:PORT (0.0.0.0:PORT: every address); port 0
    /// picks a free port, PORT+ the first free one of PORT and the 63
    /// after it. Where it listens is printed on stderr, and is the
    /// handler click_driver@@ControlSocket.port (@1, @2... for later
    /// ones). Repeatable. An address other than loopback needs
    /// --control-token.
    #[arg(short = 'p', long = "port", value_name = "[ADDRESS:]PORT[+]")]
    port: Vec<String>,
    /// The -p sockets (and --socket's listening TCP ones) ask for the
    /// token in FILE (mode 0600, at least 16 characters): a client's first
    /// command must be `AUTH TOKEN` (`paraclick ctl --token-file FILE`).
    /// Required for an address other than loopback.
    #[arg(long = "control-token", value_name = "FILE")]
    control_token: Option<String>,
    /// Open a control socket on the Unix socket FILE (permissions 0600). Repeatable.
    #[arg(short = 'u', long = "unix-socket", value_name = "FILE")]
    unix: Vec<String>,
    /// Serve the control protocol on the open socket FD: a listening socket
    /// accepts clients, a connected one is one client. Repeatable.
    #[arg(long = "socket", value_name = "FD")]
    socket: Vec<i32>,
    /// Exit with the value of handler ELEMENT.H as status (an integer, or a
    /// boolean: true is 0, false is 1), as Click's -x.
    #[arg(short = 'x', long = "exit-handler", value_name = "ELEMENT.H")]
    exit_handler: Option<String>,
    /// Write the flattened configuration to FILE ("-" for standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    output: Option<String>,
    /// Print the time taken by the run (wall clock, user and system CPU).
    #[arg(short = 't', long = "time")]
    time: bool,
    /// Do not print configuration warnings.
    #[arg(short = 'w', long = "no-warnings")]
    no_warnings: bool,
    /// Rewrite the configuration for the -j threads first, as `paraclick
    /// parallelize` would (a short profile, then the model's best plan).
    #[arg(long = "auto")]
    auto: bool,
    /// Run in simulated time, as Click's --simtime: the clock starts at
    /// 1000000000 s and jumps to the next timer (or paced source's next
    /// packet) whenever no task has work, so timer-driven configurations
    /// run as fast as the CPU allows and print the same output every run
    /// (with -j N, the N threads take turns on one OS thread).
    #[arg(long = "simtime")]
    simtime: bool,
    /// Keep every worker polling when its tasks are idle, for the lowest
    /// latency at a whole core per worker. By default a worker whose tasks
    /// all said when they will next have work (a RatedSource between two
    /// packets) sleeps until then, and one whose devices' rings are empty
    /// waits in poll(2) on their sockets, so CPU follows the load.
    #[arg(long = "busy-poll")]
    busy_poll: bool,
    /// Let a batch that an element splits go down each of its outputs
    /// whole even where those paths meet again (faster on mixed traffic;
    /// packets of one path may then overtake another's where they meet).
    /// By default such a split keeps arrival order, as Click's one packet
    /// at a time does.
    #[arg(long = "relaxed-order")]
    relaxed_order: bool,
    /// Allow hot reconfiguration, as Click's -R: writing a configuration to
    /// the `hotconfig` handler (through a control socket) replaces the
    /// running one; elements of the same name and class keep their state.
    #[arg(short = 'R', long = "allow-reconfigure")]
    allow_reconfigure: bool,
    /// Which files a configuration written to hotconfig may read
    /// (require(library FILE), FromDump's and other readers' FILENAME):
    /// "confined", only files under the -C (CLICKPATH) directories and
    /// the running configuration's own directory; or "any".
    #[arg(
        long = "hotconfig-files",
        value_name = "confined|any",
        default_value = "confined"
    )]
    hotconfig_files: String,
    /// Serve a live view of the router (graph, counters, threads, queues,
    /// handlers) to a browser on PORT of 127.0.0.1, or on ADDRESS:PORT;
    /// port 0 picks a free port. Where it listens, and the run's write
    /// token (which its page carries), are printed on stderr. Whoever
    /// reaches it can read every handler and write them all.
    #[arg(long = "web", value_name = "[ADDRESS:]PORT")]
    web: Option<String>,
    /// Serve the router's counters to Prometheus at /metrics on PORT of
    /// 127.0.0.1, or on ADDRESS:PORT (port 0 picks a free port; where it
    /// listens is printed on stderr): per element its count, bytes and
    /// drops by reason, per queue its length and drops, per thread its
    /// polls (the web view serves /metrics too). Read-only (GET only).
    #[arg(long = "metrics", value_name = "[ADDRESS:]PORT")]
    metrics: Option<String>,
    /// The directory live captures (`paraclick ctl capture E[PORT] FILE`)
    /// are written in: FILE is a new name in it, never a path, an existing
    /// file, a FIFO or a link. Without it, captures go to `-` only
    /// (streamed to the ctl client)
    #[arg(long = "capture-dir", value_name = "DIR")]
    capture_dir: Option<String>,
    /// Let --metrics listen on an address other than loopback (every
    /// host that reaches it reads the counters and element names).
    #[arg(long = "metrics-any-address")]
    metrics_any_address: bool,
    /// How configuration errors are printed: "rich" (file:line:column,
    /// the source line quoted, suggestions), "click" (Click's
    /// FILE:LINE: message, for programs that compare them), or "auto":
    /// rich when standard error is a terminal, Click's otherwise.
    #[arg(
        long = "errors",
        value_name = "auto|rich|click",
        default_value = "auto"
    )]
    errors: String,
    /// Print help.
    #[arg(long = "help", action = ArgAction::Help)]
    help: Option<bool>,
}

/// Where a tool that rewrites a configuration writes it, and how it
/// reports errors in its input.
#[derive(Args)]
struct ToolOutput {
    /// Write the result to FILE ("-", the default, for standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    output: String,
    /// How configuration errors are printed, as the run's --errors.
    #[arg(
        long = "errors",
        value_name = "auto|rich|click",
        default_value = "auto"
    )]
    errors: String,
}

#[derive(Args)]
struct FlattenArgs {
    #[command(flatten)]
    input: Input,
    #[command(flatten)]
    out: ToolOutput,
    /// Output the configuration only (Click's option for archives;
    /// paraclick reads and writes configurations only).
    #[arg(long = "config")]
    config: bool,
}

#[derive(Args)]
struct UndeadArgs {
    #[command(flatten)]
    input: Input,
    #[command(flatten)]
    out: ToolOutput,
    /// Output the configuration only (accepted as Click's click-undead).
    #[arg(short = 'c', long = "config")]
    config: bool,
}

#[derive(Args)]
struct CombineArgs {
    // Click's options, whose order matters (-n NAME before its -f FILE),
    // read in order by the combine module.
    #[arg(
        allow_hyphen_values = true,
        trailing_var_arg = true,
        help = "NAME=FILE ... (or -n NAME -f FILE, -n NAME -e EXPR), links \
                A.ELEMENT=B.ELEMENT (or -l LINK), -o FILE"
    )]
    args: Vec<String>,
}

#[derive(Args)]
struct UncombineArgs {
    /// Read the combined configuration from FILE ("-", the default, for
    /// standard input).
    #[arg(short = 'f', long = "file")]
    file: Option<String>,
    /// The component to output.
    #[arg(short = 'n', long = "name")]
    name: Option<String>,
    /// Write the component to FILE ("-", the default, for standard output).
    #[arg(short = 'o', long = "output", value_name = "FILE", default_value = "-")]
    output: String,
    #[arg(help = "[FILE [COMPONENT]]")]
    args: Vec<String>,
}

#[derive(Args)]
struct AlignArgs {
    #[command(flatten)]
    input: Input,
    #[command(flatten)]
    out: ToolOutput,
}

#[derive(Args)]
// Click's order for the positional files: the router, then pattern files.
#[command(mut_arg("args", |a| a.help(
    "[FILE] [PATTERNFILE ...] [NAME=VALUE ...]: the configuration file, then pattern \
     files (every file is one when -f or -e gives the configuration), and define() overrides",
)))]
struct XformArgs {
    #[command(flatten)]
    input: Input,
    /// Read patterns and their replacements from FILE (repeatable); files
    /// after the configuration's are pattern files too.
    #[arg(short = 'p', long = "patterns", value_name = "FILE")]
    patterns: Vec<String>,
    /// Apply the patterns backwards: replace replacements by patterns.
    #[arg(short = 'r', long = "reverse")]
    reverse: bool,
    #[command(flatten)]
    out: ToolOutput,
}

#[derive(Subcommand)]
enum Cmd {
    /// Check a configuration: report every error, located; run nothing.
    /// No device or socket is opened and no file written, but the files
    /// the configuration reads from (libraries, traces) are read to
    /// validate them: they must exist.
    Check(Input),
    /// Print the element graph in Graphviz DOT.
    Graph(Input),
    /// Print the configuration flattened, as Click's click-flatten does:
    /// compounds expanded, every element declared, then the connections
    /// in chains (what `-o` writes). Nothing is configured or checked
    /// against the element classes, so classes paraclick lacks are kept.
    Flatten(FlattenArgs),
    /// Add the Align elements a configuration needs, as Click's
    /// click-align does: Aligns where an element's alignment need is not
    /// met, redundant Aligns dropped, and an AlignmentInfo; printed
    /// flattened.
    Align(AlignArgs),
    /// Remove dead code, as Click's click-undead does: Null, StaticSwitch
    /// and StaticPullSwitch elements; elements no packet from a source
    /// reaches or that reach no sink; schedulers' dead inputs and tees'
    /// dead outputs (one left: the element goes). Prints the result
    /// flattened.
    Undead(UndeadArgs),
    /// Combine router configurations into one, as Click's click-combine:
    /// each router's elements under its name (`A/x`), each link
    /// `A.ELEMENT=B.ELEMENT` (an element, or a ToDevice or FromDevice by
    /// its device) a RouterLink element.
    Combine(CombineArgs),
    /// Extract one component router from a combined configuration, as
    /// Click's click-uncombine.
    Uncombine(UncombineArgs),
    /// Replace fragments matching patterns, as Click's click-xform does:
    /// each pattern file defines compound classes X and X_Replacement;
    /// every fragment matching X (classes, configurations with
    /// $variables, connections) becomes X_Replacement, until none is
    /// left; the result is printed flattened. Pattern files are given
    /// with -p FILE or, as Click's tool takes them, after the
    /// configuration file: `xform ROUTER PATTERNFILE...`.
    Xform(XformArgs),
    /// Measure forwarding rate and cycles per packet of the standard
    /// configurations, or of CONFIG files (counting packets with --count).
    Bench {
        /// Packets per run.
        #[arg(short = 'n', long = "packets", default_value_t = 10_000_000)]
        packets: u64,
        /// Worker threads.
        #[arg(short = 'j', long = "threads", default_value_t = 1, value_parser = parse_threads)]
        threads: usize,
        /// Runs per configuration (the median is shown).
        #[arg(short = 'r', long = "repeat", default_value_t = 3)]
        repeat: usize,
        #[arg(long = "sched", default_value = "adaptive")]
        sched: String,
        /// Suite of standard configurations: foundation, multicore, nat,
        /// or substrate (each slice's throughput against packet size, and
        /// the substrate's overhead against the slice alone).
        #[arg(long = "suite", default_value = "foundation")]
        suite: String,
        /// Read handlers whose sum counts the packets of a CONFIG run
        /// (default c.count; with --mlffr, the sources' own counts).
        #[arg(long = "count")]
        count: Vec<String>,
        /// Measure the maximum loss-free forwarding rate of CONFIG.
        #[arg(long)]
        mlffr: bool,
        /// Seconds of warm-up before each trial's window.
        #[arg(long, default_value_t = 0.2)]
        warmup: f64,
        /// Seconds of each trial's window (its halves must agree).
        #[arg(long, default_value_t = 1.0)]
        trial: f64,
        /// Loss fraction a passing trial may have.
        #[arg(long, default_value_t = 0.0)]
        loss: f64,
        /// Largest relative difference of a trial's two halves.
        #[arg(long, default_value_t = 0.05)]
        steady: f64,
        /// Upper bound of the rate search, pps (default: from saturation).
        #[arg(long = "max-rate", default_value_t = 0.0)]
        max_rate: f64,
        /// With --mlffr: offer rates (RFC 2544 search) through every
        /// FastUDPFlows too, not only RatedSources: the loss-free rate of
        /// a configuration that drops by design when saturated.
        #[arg(long)]
        offered: bool,
        /// Sweep: threads (1..=-j), sizes (define LENGTH 64..1500), or
        /// rates (forwarding rate against offered rate); writes
        /// OUT.csv, OUT.json and OUT.svg with the model beside.
        #[arg(long)]
        sweep: Option<String>,
        /// Output prefix of --sweep and --design files.
        #[arg(long, default_value = "bench")]
        out: String,
        /// Factorial design: --design 2k FACTORS.toml; without the file,
        /// the substrate's 2^4 design (slices, packet size, queue manager,
        /// threads).
        #[arg(long, value_name = "KIND")]
        design: Option<String>,
        /// Configuration files to measure instead of the standard set
        /// (they receive define $N = --packets).
        configs: Vec<String>,
    },
    /// Write an IP router configuration for the given interfaces, in the
    /// layout of Click's make-ip-conf.pl (Figure 2 of the SMP Click paper).
    #[command(name = "make-ip-conf")]
    MakeIpConf {
        #[arg(
            required = true,
            help = "Interfaces as NAME:ADDR/PREFIX:ETHER[:mtu=N], e.g. eth0:10.0.1.1/24:00:11:22:33:44:55; IPv6 in brackets, alone or after a comma: eth0:10.0.1.1/24,[2001:db8:1::1]/64:00:11:22:33:44:55"
        )]
        interfaces: Vec<String>,
        /// Use Linux devices (FromDevice/ToDevice) instead of pcap files.
        #[arg(long)]
        linux: bool,
    },
    /// Predict the maximum loss-free forwarding rate (MLFFR) of a
    /// configuration on this machine, or of one of Crowley & Baer's systems
    /// (--system FILE.toml), with a per-phase table and the bottleneck.
    Model {
        /// A system file (models/crowley-baer/*.toml) instead of a CONFIG.
        #[arg(long)]
        system: Option<String>,
        /// What-if: core clock in GHz.
        #[arg(long, value_name = "GHZ")]
        clock: Option<f64>,
        /// Threads (CPUs for --system).
        #[arg(short = 'j', long = "threads", value_parser = parse_threads)]
        threads: Option<usize>,
        /// What-if packet sizes: 64, a mix 64:7,576:4,1500:1, or FILE.pcap.
        #[arg(long)]
        traffic: Option<String>,
        /// Placement: adaptive or static (as for running).
        #[arg(long = "sched", default_value = "adaptive")]
        sched: String,
        /// Seconds of each profiling run.
        #[arg(long, default_value_t = 0.5)]
        duration: f64,
        /// Measure this machine again instead of using the cached figures.
        #[arg(long)]
        recalibrate: bool,
        /// Prediction against measurement for the standard configurations
        /// (or the CONFIGs given) at 1 and 2 threads.
        #[arg(long)]
        validate: bool,
        /// --validate: rounds of alternating 1- and 2-thread runs; the
        /// medians are reported (the shared machine is noisy).
        #[arg(long, default_value_t = 3)]
        rounds: usize,
        /// What-if core-to-core cache-line time, ns per transfer (default:
        /// measured now when threads cross): the queue hop's cross-core
        /// part scales with it.
        #[arg(long = "line-ns")]
        line_ns: Option<f64>,
        /// A device path's measured costs, `METHOD:RX_NS:TX_NS[:RING_PPS]`
        /// (as printed by scripts/device-terms.sh): CONFIG is a device
        /// router's twin (conf/fake-iprouter.click for
        /// conf/iprouter-veth.click); its sources are charged RX_NS per
        /// packet received and the tasks draining its queues TX_NS per
        /// packet sent; RING_PPS, the receive path's own loss-free rate
        /// (its rings over its wake-up latency), caps the prediction.
        #[arg(long)]
        device: Option<paraclick_model::app::DeviceTerm>,
        /// With --device: predict for a core of its own per thread (what
        /// the router forwards per second of each thread's CPU time)
        /// instead of the share of a core each thread gets now.
        #[arg(long, requires = "device")]
        dedicated: bool,
        /// With --dedicated: the CPUs the router's threads share with
        /// other work (a packet generator on the same CPUs), in all; the
        /// prediction is the rate where the router's CPU per packet plus
        /// --generator-ns fill them (default: a core per thread).
        #[arg(long, requires = "dedicated")]
        cpus: Option<f64>,
        /// With --cpus: CPU ns the other work spends per packet the router
        /// forwards (as measured by scripts/device-terms.sh: the
        /// generator's send and the receive it sets off in softirq).
        #[arg(long = "generator-ns", requires = "cpus", default_value_t = 0.0)]
        generator_ns: f64,
        /// With --cpus: the most of its core each router thread gets while
        /// the other work wants it too (1: the router runs first; under a
        /// fair scheduler next to a spinning generator, the share measured).
        #[arg(long = "thread-share", requires = "cpus", default_value_t = 1.0)]
        thread_share: f64,
        /// With --dedicated: CPU ns a router thread spends per wake-up
        /// beyond its packets (the spin before it sleeps, the sleep and
        /// the wake-up; scripts/device-terms.sh measures it). With --cpus
        /// charged once per --wake-packets packets (on CPUs shared with
        /// the generator each wake-up's spin is time the generator does
        /// not run); on a core of its own, at most once per --wake-packets
        /// packets and only in the time its packets leave of the core, so
        /// not at saturation.
        #[arg(long = "wake-ns", requires = "dedicated", default_value_t = 0.0)]
        wake_ns: f64,
        /// With --wake-ns: packets a router thread takes per wake-up (with
        /// --cpus when the CPUs are full: the generator's batch; on a core
        /// of its own at a low rate: the most wake-ups the traffic makes).
        #[arg(long = "wake-packets", requires = "wake_ns", default_value_t = 0.0)]
        wake_packets: f64,
        #[command(flatten)]
        input: Input,
    },
    /// Rewrite a configuration to spread over N threads (placement,
    /// pipeline split, flow split), chosen by the performance model; the
    /// rewritten configuration goes to standard output, headed by a
    /// comment table of the candidates.
    Parallelize {
        /// Threads to plan for.
        #[arg(short = 'j', long = "threads", default_value_t = 2, value_parser = parse_threads)]
        threads: usize,
        /// Emit candidate K of the table instead of the chosen one.
        #[arg(long)]
        candidate: Option<usize>,
        /// Seconds of each profiling run.
        #[arg(long, default_value_t = 0.3)]
        duration: f64,
        /// Also write every candidate's rewrite to DIR/candidate-K.click
        /// (from the same profile: for measuring them all).
        #[arg(long = "emit-all", value_name = "DIR")]
        emit_all: Option<String>,
        /// Predict at this core-to-core line time (ns) instead of the one
        /// measured now (a what-if, as for `model --line-ns`).
        #[arg(long = "line-ns")]
        line_ns: Option<f64>,
        /// Keep the chosen plan without running its rewrite first (by
        /// default a plan other than round-robin's is run once, offered
        /// the rate it must reach, and rejected if it loses packets).
        #[arg(long = "no-check")]
        no_check: bool,
        #[command(flatten)]
        input: Input,
    },
    /// Call a running router's handlers through its control socket (-p or -u
    /// of the router). Prints what a read returns; exits 1 on an error reply.
    Ctl {
        #[arg(
            short = 'p',
            long = "port",
            help = "The router's control port ([ADDRESS:]PORT; default 7777 on 127.0.0.1)"
        )]
        port: Option<String>,
        /// The router's Unix control socket.
        #[arg(short = 'u', long = "unix-socket")]
        unix: Option<String>,
        /// Authenticate with the token in FILE first (the router's
        /// --control-token).
        #[arg(long = "token-file", value_name = "FILE")]
        token_file: Option<String>,
        #[arg(
            trailing_var_arg = true,
            required = true,
            help = "read E.H [PARAM] | write E.H [VALUE] | list | handlers E | drops | \
                    trace add N [FILTER] | trace show | trace clear | \
                    capture E[PORT] FILE|- [N] [ENCAP] (a live capture of a connection to FILE \
                    in the router's --capture-dir, or with - to standard output: \
                    `| tcpdump -r -`) | capture stop"
        )]
        command: Vec<String>,
    },
    /// Run a substrate: several slices (virtual routers), each an
    /// ordinary configuration given its own cores and metalinks (VLANs or
    /// UDP tunnels on the physical interfaces, each held to its rate),
    /// from one TOML file (docs/SLICES.md). Takes the run options: -p,
    /// -u, -R (slice.add, slice.remove, NAME.hotconfig through the
    /// control socket), --simtime, -h s1/c.count, --report slices.
    #[command(disable_help_flag = true)]
    Substrate(Box<RunArgs>),
    /// Build a program for one configuration ahead of time: its chains
    /// of per-packet elements compiled to straight-line Rust with static
    /// types, the rest of it run as `paraclick` runs it. The program takes
    /// the run options and defines (it runs only this configuration).
    /// Needs cargo and the paraclick source tree.
    Build(aot::BuildArgs),
    /// Print an element class's documentation (or list the classes).
    Doc {
        class: Option<String>,
        /// List every element class.
        #[arg(long)]
        list: bool,
    },
}

/// The most worker threads `-j` accepts: per-thread state is allocated for
/// each (`-j 10000000000` aborted on a failed allocation).
const MAX_THREADS: usize = 1024;

/// `-j N`: 1 to [`MAX_THREADS`].
fn parse_threads(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if (1..=MAX_THREADS).contains(&n) => Ok(n),
        _ => Err(format!("expected a thread count from 1 to {MAX_THREADS}")),
    }
}

fn registry() -> Registry {
    paraclick_io::full_registry()
}

/// Reads the configuration and the NAME=VALUE defines.
fn load(input: &Input) -> Result<(Source, Vec<(String, String)>), String> {
    load_for(input, None)
}

/// [`load`], for a built program (`built`): no file means the embedded
/// configuration, and a file given must hold that same text.
fn load_for(
    input: &Input,
    built: Option<&Built>,
) -> Result<(Source, Vec<(String, String)>), String> {
    let mut file = input.file.clone();
    let mut defines = Vec::new();
    for a in &input.args {
        if let Some((k, v)) = a.split_once('=') {
            if !k.is_empty()
                && k.trim_start_matches('$')
                    .chars()
                    .all(|c| c.is_alphanumeric() || c == '_')
            {
                defines.push((k.trim_start_matches('$').to_string(), v.to_string()));
                continue;
            }
        }
        if file.is_none() && input.expr.is_none() {
            file = Some(a.clone());
        } else {
            return Err(format!("unexpected argument '{a}'"));
        }
    }
    if let Some(b) = built {
        if input.expr.is_some() {
            return Err(format!(
                "-e: this program was built for {} and runs only that configuration",
                b.name
            ));
        }
        let src = match &file {
            None => Source {
                name: b.name.to_string(),
                text: b.conf.to_string(),
            },
            Some(f) => {
                let text = if f == "-" {
                    read_stdin()?.text
                } else {
                    std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?
                };
                if text != b.conf {
                    return Err(format!(
                        "{f}: not the configuration this program was built from ({}); \
                         build one for it with `paraclick build {f} -o PROGRAM`",
                        b.name
                    ));
                }
                Source {
                    name: f.clone(),
                    text,
                }
            }
        };
        let mut all: Vec<(String, String)> = b
            .defines
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        all.extend(defines);
        return Ok((src, all));
    }
    let src = match (&input.expr, &file) {
        (Some(_), Some(_)) => return Err("give a configuration file or -e, not both".into()),
        (Some(e), None) => Source {
            name: "<expr>".into(),
            text: e.clone(),
        },
        (None, Some(f)) if f == "-" => read_stdin()?,
        (None, Some(f)) => Source {
            name: f.clone(),
            text: std::fs::read_to_string(f).map_err(|e| format!("{f}: {e}"))?,
        },
        // As Click's driver: no file and no -e reads standard input.
        (None, None) => {
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                eprintln!(
                    "paraclick: reading the configuration from standard input \
                     (end it with Ctrl-D; see --help)"
                );
            }
            read_stdin()?
        }
    };
    Ok((src, defines))
}

/// The configuration on standard input.
fn read_stdin() -> Result<Source, String> {
    let mut text = String::new();
    std::io::Read::read_to_string(&mut std::io::stdin(), &mut text)
        .map_err(|e| format!("<stdin>: {e}"))?;
    Ok(Source {
        name: "<stdin>".into(),
        text,
    })
}

/// What a hotconfig may read when confined: files under the CLICKPATH
/// (`-C`, else the environment's) and the running configuration's own
/// directory.
fn hotconfig_files(src: &Source, clickpath: Option<&str>) -> FilePolicy {
    let cp = match clickpath {
        Some(c) => c.to_string(),
        None => std::env::var("CLICKPATH").unwrap_or_default(),
    };
    let mut dirs: Vec<std::path::PathBuf> = cp
        .split(':')
        .filter(|d| !d.is_empty())
        .map(std::path::PathBuf::from)
        .collect();
    let file = std::path::Path::new(&src.name);
    if file.is_file() {
        if let Some(dir) = file.parent() {
            dirs.push(if dir.as_os_str().is_empty() {
                ".".into()
            } else {
                dir.to_path_buf()
            });
        }
    }
    FilePolicy::under(dirs)
}

fn report_errors(src: &Source, diags: &[Diagnostic]) -> ExitCode {
    let mut set = SourceSet::default();
    set.add(Source {
        name: src.name.clone(),
        text: src.text.clone(),
    });
    // Errors in required libraries show their own lines.
    let mut libs: Vec<&str> = diags
        .iter()
        .filter_map(|d| d.span.as_ref())
        .map(|s| &*s.file)
        .filter(|f| *f != src.name)
        .collect();
    libs.sort_unstable();
    libs.dedup();
    for f in libs {
        if let Ok(text) = std::fs::read_to_string(f) {
            set.add(Source {
                name: f.to_string(),
                text,
            });
        }
    }
    eprint!("{}", render(diags, &set));
    ExitCode::from(1)
}

/// Click's form of the errors (see [`paraclick_lang::render_click`]);
/// after errors found while building the router (not while parsing, nor
/// an unknown class, which Click's lexer reports), Click's driver adds
/// "Router could not be initialized!".
fn report_click(diags: &[Diagnostic], building: bool) -> ExitCode {
    eprint!("{}", paraclick_lang::render_click(diags));
    if building && paraclick_lang::router_not_initialized(diags) {
        eprintln!("Router could not be initialized!");
    }
    ExitCode::from(1)
}

/// Whether `--errors STYLE` asks for Click's form.
fn click_errors(style: &str) -> Result<bool, String> {
    match style {
        "rich" => Ok(false),
        "click" => Ok(true),
        "auto" => Ok(!std::io::IsTerminal::is_terminal(&std::io::stderr())),
        other => Err(format!("--errors: '{other}' is not auto, rich or click")),
    }
}

fn fail(msg: &str) -> ExitCode {
    eprintln!("paraclick: {msg}");
    ExitCode::from(1)
}

/// The command line: every subcommand answers `--help`, and `-h` where it
/// has no `-h` of its own. The top level turns clap's help flag off, as
/// its `-h` reads handlers (as Click's does), and clap carries that
/// setting down to the subcommands; they get their help flag back here.
fn command() -> clap::Command {
    Cli::command().mut_subcommands(|sub| {
        if sub.get_arguments().any(|a| a.get_long() == Some("help")) {
            return sub;
        }
        let own_h = sub.get_arguments().any(|a| a.get_short() == Some('h'));
        let mut help = Arg::new("help")
            .long("help")
            .action(ArgAction::Help)
            .help("Print help");
        if !own_h {
            help = help.short('h');
        }
        sub.arg(help)
    })
}

/// Registers the process for the notifiers' heavy fence
/// (`membarrier(2)`, [`paraclick_runtime::notifier::light_wakes`]) while
/// it has one thread: the kernel then has nothing to wait for, whereas
/// once another thread exists (the signal watcher starts before the
/// configuration is read) registering waits for an RCU grace period, 7
/// to 13 ms measured on a loaded 2-core machine, added to every start.
fn register_fences() {
    let _ = paraclick_runtime::notifier::light_wakes();
}

/// The `paraclick` command line: parses the process's arguments and runs
/// what they ask for.
pub fn main_cli() -> ExitCode {
    register_fences();
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    match cli.cmd {
        Some(Cmd::Check(input)) => check(&input),
        Some(Cmd::Graph(input)) => graph(&input),
        Some(Cmd::Flatten(f)) => flatten(&f),
        Some(Cmd::Align(a)) => align::run(&a),
        Some(Cmd::Undead(a)) => undead::main(&a),
        Some(Cmd::Combine(a)) => combine::main_combine(&a),
        Some(Cmd::Uncombine(a)) => combine::main_uncombine(&a),
        Some(Cmd::Xform(a)) => xform::run(&a),
        Some(Cmd::Doc { class, list }) => doc(class.as_deref(), list),
        Some(Cmd::Model {
            system,
            clock,
            threads,
            traffic,
            sched,
            duration,
            recalibrate,
            validate,
            rounds,
            line_ns,
            device,
            dedicated,
            cpus,
            generator_ns,
            thread_share,
            wake_ns,
            wake_packets,
            input,
        }) => model(ModelArgs {
            system,
            clock,
            threads,
            traffic,
            sched,
            duration,
            recalibrate,
            validate,
            rounds,
            line_ns,
            device,
            dedicated,
            shared: cpus.map(|cpus| paraclick_model::app::SharedCpus {
                cpus,
                other_ns: generator_ns,
                thread_share,
                wake_ns,
                wake_packets,
            }),
            idle_wakes: (cpus.is_none() && wake_ns > 0.0).then_some(
                paraclick_model::app::IdleWakes {
                    wake_ns,
                    wake_packets,
                },
            ),
            input,
        }),
        Some(Cmd::Parallelize {
            threads,
            candidate,
            duration,
            emit_all,
            line_ns,
            no_check,
            input,
        }) => parallelize_cmd(
            threads,
            &parallelize::Options {
                secs: duration,
                pick: candidate,
                emit_all: emit_all.map(std::path::PathBuf::from),
                line_ns,
                check: !no_check,
            },
            &input,
        ),
        Some(Cmd::Substrate(a)) => substrate_cmd(*a),
        Some(Cmd::Ctl {
            port,
            unix,
            token_file,
            command,
            ..
        }) => ExitCode::from(ctl::client(
            port.as_deref(),
            unix.as_deref(),
            token_file.as_deref(),
            &command,
        )),
        Some(Cmd::MakeIpConf { interfaces, linux }) => {
            let mut v = Vec::new();
            for spec in &interfaces {
                match make_ip_conf::parse_iface(spec) {
                    Ok(i) => v.push(i),
                    Err(e) => return fail(&format!("{spec}: {e}")),
                }
            }
            if let Err(e) = make_ip_conf::validate(&v) {
                return fail(&e);
            }
            let device = if linux {
                make_ip_conf::Device::Linux
            } else {
                make_ip_conf::Device::Pcap
            };
            let _ = write!(std::io::stdout(), "{}", make_ip_conf::generate(&v, device));
            ExitCode::SUCCESS
        }
        Some(Cmd::Bench {
            packets,
            repeat,
            design: Some(kind),
            configs,
            ..
        }) if configs.is_empty() => {
            // No factors file: the substrate's design (docs/SLICES.md).
            if kind != "2k" {
                return fail(&format!("--design: unknown design '{kind}' (2k)"));
            }
            let reg = registry();
            match substrate_bench::run_design(packets, repeat, &reg) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => fail(&e),
            }
        }
        Some(Cmd::Bench {
            packets: _,
            threads,
            repeat: _,
            sched,
            suite: _,
            count,
            configs,
            mlffr,
            warmup,
            trial,
            loss,
            steady,
            max_rate,
            offered,
            sweep,
            out,
            design,
        }) if mlffr || sweep.is_some() || design.is_some() => {
            let settings = mlffr::Settings {
                threads: threads.max(1),
                policy: match sched.parse() {
                    Ok(p) => p,
                    Err(e) => return fail(&e),
                },
                warmup,
                trial,
                loss,
                steady_tol: steady,
                count,
                resolution: 0.01,
                max_rate,
                offer_all: offered,
            };
            if !(warmup >= 0.0 && trial > 0.0 && (0.0..1.0).contains(&loss) && steady > 0.0) {
                return fail("--warmup >= 0, --trial > 0, 0 <= --loss < 1, --steady > 0");
            }
            harness::main(harness::Request {
                configs,
                settings,
                sweep,
                out,
                design,
            })
        }
        Some(Cmd::Bench {
            packets,
            threads,
            repeat,
            sched,
            suite,
            count,
            configs,
            ..
        }) => match suite.as_str() {
            "multicore" => {
                let reg = registry();
                let cases = bench::multicore_cases(packets);
                if bench::run_multicore(&cases, &reg, repeat) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            "foundation" => {
                let count = if count.is_empty() {
                    vec!["c.count".to_string()]
                } else {
                    count
                };
                bench_cmd(packets, threads, repeat, &sched, count, configs)
            }
            "nat" => {
                let reg = registry();
                // Arguments, if any, are the flow counts to measure.
                let flows: Result<Vec<u64>, _> = configs.iter().map(|c| c.parse::<u64>()).collect();
                let flows = match flows {
                    Ok(f) if f.iter().all(|&n| n >= 2) => f,
                    _ => return fail("--suite nat: arguments are flow counts (at least 2)"),
                };
                let cases = bench::nat_cases(packets, &flows);
                if bench::run_nat(&cases, &reg, repeat) {
                    ExitCode::SUCCESS
                } else {
                    ExitCode::from(1)
                }
            }
            "substrate" => {
                let reg = registry();
                match substrate_bench::run_suite(packets, repeat, &reg) {
                    Ok(()) => ExitCode::SUCCESS,
                    Err(e) => fail(&e),
                }
            }
            other => fail(&format!(
                "--suite: unknown suite '{other}' (foundation, multicore, nat, substrate)"
            )),
        },
        Some(Cmd::Build(b)) => aot::build_cmd(&b),
        None => run(cli.run, None),
    }
}

/// What a program written by `paraclick build` hands the command line:
/// the configuration it was built from and its compiled entries.
pub struct Built {
    /// The configuration's text, as it was when built.
    pub conf: &'static str,
    /// The configuration's file name when built (for messages).
    pub name: &'static str,
    /// The defines given to the build: the program's defaults, which
    /// its own command line's NAME=VALUE override.
    pub defines: &'static [(&'static str, &'static str)],
    /// The connections the compiled code follows by a direct call, as
    /// (element, output port, element it calls): checked against the
    /// running configuration before anything is installed.
    pub calls: &'static [(&'static str, usize, &'static str)],
    /// Binds the compiled elements by name, index and type, and installs
    /// an entry at each; an error (an element missing, or of another
    /// index or type) installs nothing.
    pub install: fn(&mut Router) -> Result<usize, String>,
}

/// The command line of a built program: `paraclick`'s run options and
/// defines, for the configuration embedded in it (a configuration file
/// given must be that text). The compiled entries are installed when the
/// router is built; if the running graph does not match what was
/// compiled (other defines that change an element's type, `--auto`), the
/// program warns and runs every element through the dynamic router.
pub fn run_built(built: Built) -> ExitCode {
    register_fences();
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(c) => c,
        Err(e) => e.exit(),
    };
    if cli.cmd.is_some() {
        return fail(&format!(
            "this program was built for {} and only runs it (the \
             subcommands are paraclick's)",
            built.name
        ));
    }
    run(cli.run, Some(&built))
}

fn check(input: &Input) -> ExitCode {
    let (src, defines) = match load(input) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let reg = registry();
    // Check only: no device is opened, no file written, no tap created.
    let opts = BuildOptions {
        defines,
        pin: false,
        check_only: true,
        clickpath: input.clickpath.clone(),
        max_elements: input.max_elements,
        ..BuildOptions::default()
    };
    match Router::build(&src, &reg, &opts) {
        Ok(r) => {
            println!("{}: ok ({} elements)", src.name, r.element_names().len());
            ExitCode::SUCCESS
        }
        Err(d) => report_errors(&src, &d),
    }
}

fn graph(input: &Input) -> ExitCode {
    let (src, defines) = match load(input) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let g = match parse_config_with(&src, &defines, &input.parse_options()) {
        Ok(g) => g,
        Err(d) => return report_errors(&src, &d),
    };
    let reg = registry();
    let checked = Router::check(&g, &reg).ok();
    let _ = write!(
        std::io::stdout(),
        "{}",
        paraclick_lang::dot::to_dot(&g, checked.as_ref())
    );
    ExitCode::SUCCESS
}

fn flatten(f: &FlattenArgs) -> ExitCode {
    match read_flat(&f.input, &f.out.errors) {
        Ok(g) => write_output(&f.out.output, &paraclick_lang::print_click(&g)),
        Err(code) => code,
    }
}

/// Reads and expands the configuration of a tool that rewrites one
/// (flatten, align, undead), without configuring it; its errors are
/// reported in the form `errors` (`--errors`) asks for, and the exit
/// code returned.
fn read_flat(input: &Input, errors: &str) -> Result<paraclick_lang::FlatGraph, ExitCode> {
    let click = click_errors(errors).map_err(|e| fail(&e))?;
    let (src, defines) = load(input).map_err(|e| fail(&e))?;
    parse_config_with(&src, &defines, &input.parse_options()).map_err(|d| {
        if click {
            report_click(&d, false)
        } else {
            report_errors(&src, &d)
        }
    })
}

/// Writes `text` to FILE, or to standard output for "-".
fn write_output(out: &str, text: &str) -> ExitCode {
    let r = if out == "-" {
        std::io::stdout().write_all(text.as_bytes())
    } else {
        std::fs::write(out, text)
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(&format!("{out}: {e}")),
    }
}

fn doc(class: Option<&str>, list: bool) -> ExitCode {
    let reg = registry();
    match class {
        Some(c) if !list => match reg.get(c) {
            Some(spec) if !spec.doc.is_empty() => {
                let mut text = spec.doc.to_string();
                if !spec.drop_reasons.is_empty() {
                    // From the class itself, so it cannot go stale.
                    let rs: Vec<String> =
                        spec.drop_reasons.iter().map(|r| format!("`{r}`")).collect();
                    text.push_str(&format!(
                        "\n\nDrop reasons (the `drop_reasons` handler): {}.",
                        rs.join(", ")
                    ));
                }
                let _ = writeln!(std::io::stdout(), "{text}");
                ExitCode::SUCCESS
            }
            Some(_) => fail(&format!("{c}: no documentation")),
            None => match paraclick_lang::check::suggest(c, &reg.names()) {
                Some(s) => fail(&format!(
                    "unknown element class '{c}' (did you mean '{s}'?)"
                )),
                None => fail(&format!("unknown element class '{c}'")),
            },
        },
        _ => {
            let mut out = std::io::stdout().lock();
            for n in reg.names() {
                let summary = reg
                    .doc(n)
                    .and_then(|d| {
                        d.lines()
                            .map(str::trim)
                            .find(|l| !l.is_empty() && !l.contains('(') && *l != n)
                    })
                    .unwrap_or("");
                if writeln!(out, "{n:24} {summary}").is_err() {
                    break; // reader went away (e.g. `| head`)
                }
            }
            ExitCode::SUCCESS
        }
    }
}

/// `paraclick substrate FILE`: builds the substrate's router and runs it
/// as `run` runs a configuration, its control sockets answering the
/// slices' commands too.
fn substrate_cmd(a: RunArgs) -> ExitCode {
    let watch = match watch_stops() {
        Ok(w) => w,
        Err(e) => return fail(&e),
    };
    paraclick_runtime::registry::set_warnings(!a.no_warnings);
    let started = std::time::Instant::now();
    let file = match (&a.input.file, a.input.args.as_slice()) {
        (Some(f), []) => f.clone(),
        (None, [f]) => f.clone(),
        _ => {
            return fail("substrate: give one substrate FILE (its slices carry their own defines)")
        }
    };
    if a.input.expr.is_some() || a.auto || a.output.is_some() {
        return fail("substrate: -e, --auto and -o do not apply to a substrate");
    }
    if a.threads != 1 {
        eprintln!("paraclick: substrate: -j ignored: the file's `cores` sets the threads");
    }
    for r in &a.report {
        if !["costs", "threads", "drops", "slices"].contains(&r.as_str()) {
            return fail(&format!(
                "--report: unknown report '{r}' (costs, threads, drops, slices)"
            ));
        }
    }
    let policy: SchedPolicy = match a.sched.parse() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let too_big = std::fs::metadata(&file)
        .map(|m| m.len() > paraclick_substrate::spec::MAX_SPEC_BYTES as u64)
        .unwrap_or(false);
    if too_big {
        return fail(&format!("{file}: too large for a substrate file"));
    }
    let text = match std::fs::read_to_string(&file) {
        Ok(t) => t,
        Err(e) => return fail(&format!("{file}: {e}")),
    };
    let src = Source {
        name: file.clone(),
        text: text.clone(),
    };
    let files = match a.hotconfig_files.as_str() {
        "any" => FilePolicy::Any,
        "confined" => hotconfig_files(&src, a.input.clickpath.as_deref()),
        other => {
            return fail(&format!(
                "--hotconfig-files: '{other}' is neither 'confined' nor 'any'"
            ))
        }
    };
    if let Some(n) = a.pool {
        paraclick_packet::pool::set_default_capacity(n);
    }
    paraclick_runtime::sched::set_busy_poll(a.busy_poll);
    let opts = BuildOptions {
        policy,
        pin: !a.no_pin,
        profile: a.report.iter().any(|r| r == "costs"),
        simtime: a.simtime,
        clickpath: a.input.clickpath.clone(),
        max_elements: a.input.max_elements,
        relaxed_order: a.relaxed_order,
        files,
        ..BuildOptions::default()
    };
    let dir = std::path::Path::new(&file)
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(std::path::Path::new("."))
        .to_path_buf();
    let sub = match paraclick_substrate::Substrate::build(
        &file,
        &text,
        &dir,
        std::sync::Arc::new(registry()),
        &opts,
        a.allow_reconfigure,
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(1);
        }
    };
    let backend = sub.backend();
    let hot = sub.hot().clone();
    let report = || sub.report();
    serve_and_report(&a, &hot, backend, watch, started, Some(&report))
}

/// The CPUs this process may use (its affinity, `taskset`), if known.
fn usable_cpus() -> Option<usize> {
    std::thread::available_parallelism().ok().map(|n| n.get())
}

/// A warning when `-j threads` asks for more workers than the CPUs this
/// process may use: they will take turns, and a worker waiting for its
/// turn holds up the others' packets. `pinned`: the workers are pinned
/// all the same (`--pin`).
fn oversubscribed(threads: usize, pinned: bool) -> Option<String> {
    let cpus = usable_cpus()?;
    (threads > cpus).then(|| {
        format!(
            "-j {threads}: this machine has {cpus} CPU{}; threads will share them ({})",
            if cpus == 1 { "" } else { "s" },
            if pinned {
                "pinned, as --pin asks"
            } else {
                "not pinned, so the kernel can move them off a busy CPU; --pin pins them"
            }
        )
    })
}

/// Whether the workers are pinned to CPUs: with more than one, unless
/// `--no-pin`, as long as each has a CPU of its own; one worker, or more
/// workers than CPUs, only with `--pin`. Workers sharing CPUs pinned are
/// held to their CPUs however busy those get: the netns test's router at
/// `-j 4` on two CPUs, beside the other netns tests' routers, lost
/// packets in 6 of 160 rounds of UDP flows pinned two to a CPU, each
/// time with the output's worker waiting for its CPU most of the round
/// while the other CPU's waited far less; unpinned, in 1 of 160.
fn pin_workers(a: &RunArgs) -> bool {
    if a.no_pin {
        return false;
    }
    a.pin || (a.threads > 1 && usable_cpus().is_none_or(|cpus| a.threads <= cpus))
}

fn run(a: RunArgs, built: Option<&Built>) -> ExitCode {
    let watch = match watch_stops() {
        Ok(w) => w,
        Err(e) => return fail(&e),
    };
    paraclick_runtime::registry::set_warnings(!a.no_warnings);
    let started = std::time::Instant::now();
    let (src, defines) = match load_for(&a.input, built) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let click = match click_errors(&a.errors) {
        Ok(c) => c,
        Err(e) => return fail(&e),
    };
    paraclick_runtime::registry::set_click_messages(click);
    if click {
        // Click tells the language's errors from the router's.
        if let Err(d) = parse_config_with(&src, &defines, &a.input.parse_options()) {
            return report_click(&d, false);
        }
    }
    if let Some(out) = &a.output {
        let g = match parse_config_with(&src, &defines, &a.input.parse_options()) {
            Ok(g) => g,
            Err(d) => return report_errors(&src, &d),
        };
        let text = paraclick_lang::print_click(&g);
        if write_output(out, &text) != ExitCode::SUCCESS {
            return ExitCode::from(1);
        }
    }
    let policy: SchedPolicy = match a.sched.parse() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let hot_files = match a.hotconfig_files.as_str() {
        "any" => FilePolicy::Any,
        "confined" => hotconfig_files(&src, a.input.clickpath.as_deref()),
        other => {
            return fail(&format!(
                "--hotconfig-files: '{other}' is neither 'confined' nor 'any'"
            ))
        }
    };
    if a.threads == 0 {
        return fail("-j: need at least one thread");
    }
    if !a.simtime {
        if let Some(w) = oversubscribed(a.threads, pin_workers(&a)) {
            eprintln!("paraclick: warning: {w}");
        }
    }
    for r in &a.report {
        if !["costs", "threads", "drops", "slices"].contains(&r.as_str()) {
            return fail(&format!(
                "--report: unknown report '{r}' (costs, threads, drops, slices)"
            ));
        }
    }
    if let Some(n) = a.pool {
        paraclick_packet::pool::set_default_capacity(n);
    }
    paraclick_runtime::sched::set_busy_poll(a.busy_poll);
    if let Some(d) = &a.capture_dir {
        match std::fs::canonicalize(d) {
            Ok(p) if p.is_dir() => paraclick_runtime::capture::set_directory(Some(p)),
            _ => return fail(&format!("--capture-dir {d}: not a directory")),
        }
    }
    let reg = std::sync::Arc::new(registry());
    let (src, defines) = if a.auto {
        match auto_rewrite(
            &src,
            &reg,
            &defines,
            a.threads,
            &parallelize::Options::default(),
        ) {
            Ok(out) => {
                eprintln!("paraclick --auto:");
                // The table, not the comments of the user's own text.
                let head = out.text.get(..out.config_at).unwrap_or(&out.text);
                for l in head.lines().take_while(|l| l.starts_with("//")) {
                    eprintln!("{l}");
                }
                // The user's own text (a placement, or a split written as
                // a change to it) still needs the defines; a flattened
                // rewrite has them substituted.
                let defines = if out.own_text { defines } else { Vec::new() };
                (
                    Source {
                        name: format!("{} (--auto -j {})", src.name, a.threads),
                        text: out.text,
                    },
                    defines,
                )
            }
            Err(e) => return fail(&format!("--auto: {e}")),
        }
    } else {
        (src, defines)
    };
    let opts = BuildOptions {
        threads: a.threads,
        defines,
        policy,
        pin: pin_workers(&a),
        profile: a.report.iter().any(|r| r == "costs"),
        simtime: a.simtime,
        clickpath: a.input.clickpath.clone(),
        max_elements: a.input.max_elements,
        relaxed_order: a.relaxed_order,
        ..BuildOptions::default()
    };
    let fits = built.and_then(|b| aot::check_built(b, &src, &opts, &a.input.parse_options()));
    let mut router = match Router::build(&src, &reg, &opts) {
        Ok(r) => r,
        Err(d) if click => return report_click(&d, true),
        Err(d) => return report_errors(&src, &d),
    };
    if router.element_names().is_empty() && !a.quit {
        // Nothing would ever run or stop it: as Click, say so and exit
        // (a run used to wait forever for a signal).
        if !a.no_warnings {
            eprintln!(
                "paraclick: warning: {}: configuration has no elements, exiting",
                src.name
            );
        }
        return ExitCode::SUCCESS;
    }
    if let (Some(b), Some(fits)) = (built, fits) {
        aot::install_built(b, fits, &mut router);
    }
    if let Some(n) = a.trace {
        let spec = match &a.trace_filter {
            Some(f) => format!("{n} {f}"),
            None => n.to_string(),
        };
        if let Err(e) = router.write_handler("trace_add", &spec) {
            return fail(&format!("--trace: {e}"));
        }
    }
    // A hotconfig comes from whoever can write to a control socket.
    let hot_opts = BuildOptions {
        files: hot_files,
        ..opts
    };
    let hot = Hot::new(router, reg, hot_opts, a.allow_reconfigure);
    let backend = hot.backend();
    serve_and_report(&a, &hot, backend, watch, started, None)
}

/// Catches SIGINT and SIGTERM from the start of a run, before the
/// configuration is read (a shell's background job starts with SIGINT
/// ignored: one that came during the build used to be lost, and the
/// router ran on). The first that comes before the router runs takes
/// effect once it is built (see `serve_and_report`); a second one quits
/// at once, so that a build that waits (a configuration from a terminal
/// or a FIFO) can still be interrupted.
fn watch_stops() -> Result<stop_watch::StopWatch, String> {
    let signals = [signal_hook::consts::SIGINT, signal_hook::consts::SIGTERM];
    stop_watch::StopWatch::start(&signals, |sig, n| {
        let name = signal_hook::low_level::signal_name(sig).unwrap_or("signal");
        if n == 1 {
            eprintln!(
                "paraclick: {name} before the router runs: it takes effect once the \
                 router is built (a second signal quits now)"
            );
        } else {
            eprintln!("paraclick: {name}: a second signal before the router runs: quitting");
            std::process::exit(128 + sig);
        }
    })
    .map_err(|e| format!("cannot watch for signals: {e}"))
}

/// Runs `hot` (unless -q) with its control sockets and web view on
/// `backend`, stopped by the signals `watch` catches, then prints what
/// the run's options ask for (-h, -x, -t, --report; `slices`, a
/// substrate's per-slice figures, from `slices`).
fn serve_and_report(
    a: &RunArgs,
    hot: &std::sync::Arc<Hot>,
    backend: std::sync::Arc<dyn paraclick_runtime::control::Backend>,
    watch: stop_watch::StopWatch,
    started: std::time::Instant,
    slices: Option<&dyn Fn() -> String>,
) -> ExitCode {
    if !a.quit {
        let servers = match ctl::start_servers(
            &backend,
            &a.port,
            a.control_token.as_deref(),
            &a.unix,
            &a.socket,
        ) {
            Ok(s) => s,
            Err(e) => return fail(&e),
        };
        if let Some(w) = &a.web {
            let addr = match web::addr(w) {
                Ok(x) => x,
                Err(e) => return fail(&e),
            };
            match web::start(addr, backend.clone()) {
                Ok(w) => {
                    eprintln!("paraclick: web view on http://{}/", w.addr);
                    eprintln!(
                        "paraclick: web view writes need header {}: {}",
                        web::TOKEN_HEADER,
                        w.token.reveal()
                    );
                    if !w.addr.ip().is_loopback() {
                        eprintln!(
                            "paraclick: warning: the web view on {} serves its page, and \
                             with it the write token, to every host that reaches it",
                            w.addr
                        );
                    }
                }
                Err(e) => return fail(&e),
            }
        }
        if let Some(m) = &a.metrics {
            let addr = match metrics::addr(m, a.metrics_any_address) {
                Ok(x) => x,
                Err(e) => return fail(&e),
            };
            match metrics::start(addr, backend.clone()) {
                Ok(m) => eprintln!("paraclick: metrics on http://{}/metrics", m.addr),
                Err(e) => return fail(&e),
            }
        }
        // INT and TERM stop the router from now on, unless it catches
        // one itself: a Script(TYPE SIGNAL INT) took INT's disposition
        // over when it initialized, and gets every INT from then on. One
        // that came before the router ran is a stop now (the router stops
        // before its tasks run), or, caught by the router, sent again for
        // its Script.
        let stopper = hot.clone();
        let pass_on = watch.arm(paraclick_runtime::signals::caught, move || stopper.stop());
        for sig in pass_on {
            if let Err(e) = paraclick_runtime::signals::kill(sig, i64::from(std::process::id())) {
                eprintln!("paraclick: {e}");
            }
        }
        hot.run();
        watch.finish();
        // Let a client that stopped the router get its reply.
        for s in &servers {
            s.shutdown(std::time::Duration::from_millis(500));
        }
    } else {
        watch.finish();
    }
    let router = hot.current();
    let mut status = ExitCode::SUCCESS;
    if a.trace.is_some() {
        match router.read_handler("trace") {
            Ok(t) => eprint!("{t}"),
            Err(e) => eprintln!("paraclick: --trace: {e}"),
        }
    }
    if !print_handlers(&router, &a.handlers) {
        status = ExitCode::from(1);
    }
    if let Some(h) = &a.exit_handler {
        match router.read_handler(h) {
            Ok(v) => match flat::exit_status(&v) {
                Some(code) => status = ExitCode::from(code),
                None => {
                    eprintln!(
                        "paraclick: -x {h}: value '{}' is not an integer or boolean",
                        v.trim()
                    );
                    status = ExitCode::from(1);
                }
            },
            Err(e) => {
                eprintln!("paraclick: -x: {e}");
                status = ExitCode::from(1);
            }
        }
    }
    if a.time {
        eprintln!("{}", flat::time_report(started.elapsed()));
    }
    for r in &a.report {
        match r.as_str() {
            "threads" => {
                eprint!("{}", router.thread_report());
                let crossing = router.crossing_queues();
                for (q, mp, mc) in router.ring_modes() {
                    eprintln!(
                        "queue {q}: {}-producer, {}-consumer ring{}",
                        if mp { "multi" } else { "single" },
                        if mc { "multi" } else { "single" },
                        if crossing.contains(&q) {
                            format!(
                                ", between threads: producers publish up to {} packets at a time",
                                paraclick_elements::standard::queue::STAGE
                            )
                        } else {
                            String::new()
                        }
                    );
                }
            }
            "costs" => eprint!("{}", router.cost_report()),
            "slices" => match slices {
                Some(f) => eprint!("{}", f()),
                None => eprintln!("--report slices: not a substrate (paraclick substrate FILE)"),
            },
            "drops" => {
                let drops = router.drops();
                if drops.is_empty() {
                    eprintln!("no drops");
                }
                for (name, d) in drops {
                    eprintln!("{name}: {d} dropped");
                    // Why, where the element's class names reasons.
                    let reasons = router.drop_reasons(&name).unwrap_or_default();
                    if reasons
                        .iter()
                        .any(|r| r.0 != paraclick_runtime::drops::UNSPECIFIED)
                    {
                        for (reason, n) in reasons {
                            eprintln!("  {reason}: {n}");
                        }
                    }
                }
            }
            _ => {}
        }
    }
    status
}

/// Prints the `-h` handlers' values on standard output, as Click's
/// driver does: a spec's element part is an element name, a glob pattern
/// over element names (`*`, `?`, `[...]`) or an element class; with one
/// spec naming one element only the value is printed, otherwise each value
/// follows a `NAME.HANDLER:` line and is followed by an empty line. Errors
/// go to standard error; false when there was one.
fn print_handlers(router: &Router, specs: &[String]) -> bool {
    let print_names = specs.len() > 1;
    let mut ok = true;
    let mut out = std::io::stdout().lock();
    for spec in specs {
        let (calls, many) = match flat::expand_handler_spec(
            spec,
            &router.element_names(),
            |e| {
                router
                    .read_handler(&format!("{e}.class"))
                    .unwrap_or_default()
            },
            |e, h| {
                router
                    .handlers(e)
                    .is_some_and(|l| l.iter().any(|x| x.name == h && x.read))
            },
        ) {
            Ok(x) => x,
            Err(e) => {
                eprintln!("paraclick: -h {spec}: {e}");
                ok = false;
                continue;
            }
        };
        for full in calls {
            match router.read_handler(&full) {
                Ok(v) => {
                    // An empty value prints nothing, as Click's does.
                    let nl = if v.is_empty() || v.ends_with('\n') {
                        ""
                    } else {
                        "\n"
                    };
                    let _ = if print_names || many {
                        write!(out, "{full}:\n{v}{nl}\n")
                    } else {
                        write!(out, "{v}{nl}")
                    };
                }
                Err(e) => {
                    eprintln!("paraclick: {e}");
                    ok = false;
                }
            }
        }
    }
    let _ = out.flush();
    ok
}

fn bench_cmd(
    packets: u64,
    threads: usize,
    repeat: usize,
    sched: &str,
    count: Vec<String>,
    configs: Vec<String>,
) -> ExitCode {
    let policy: SchedPolicy = match sched.parse() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    let reg = registry();
    let cases = if configs.is_empty() {
        bench::builtin_cases(packets)
    } else {
        let mut v = Vec::new();
        for c in configs {
            let text = match std::fs::read_to_string(&c) {
                Ok(t) => t,
                Err(e) => return fail(&format!("{c}: {e}")),
            };
            v.push(bench::Case {
                name: c.clone(),
                source: Source { name: c, text },
                defines: vec![("N".into(), packets.to_string())],
                count: count.clone(),
            });
        }
        v
    };
    if bench::run_suite(&cases, &reg, threads.max(1), policy, repeat) {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    }
}

struct ModelArgs {
    system: Option<String>,
    clock: Option<f64>,
    threads: Option<usize>,
    traffic: Option<String>,
    sched: String,
    duration: f64,
    recalibrate: bool,
    validate: bool,
    rounds: usize,
    line_ns: Option<f64>,
    device: Option<paraclick_model::app::DeviceTerm>,
    dedicated: bool,
    shared: Option<paraclick_model::app::SharedCpus>,
    /// --wake-ns without --cpus: the threads' wake-ups on cores of their
    /// own.
    idle_wakes: Option<paraclick_model::app::IdleWakes>,
    input: Input,
}

fn auto_rewrite(
    src: &Source,
    reg: &Registry,
    defines: &[(String, String)],
    threads: usize,
    opts: &parallelize::Options,
) -> Result<parallelize::Output, String> {
    let (machine, _) = paraclick_model::machine::Machine::load_or_calibrate(false)?;
    parallelize::parallelize_output(src, reg, defines, threads.max(1), &machine, opts)
}

fn parallelize_cmd(threads: usize, opts: &parallelize::Options, input: &Input) -> ExitCode {
    if threads == 0 {
        return fail("-j: need at least one thread");
    }
    if !(opts.secs > 0.0 && opts.secs <= 60.0) {
        return fail("--duration: between 0 and 60 seconds");
    }
    if let Some(l) = opts.line_ns {
        if !(l > 0.0 && l.is_finite()) {
            return fail("--line-ns: need a positive number of ns");
        }
    }
    let (src, defines) = match load(input) {
        Ok(x) => x,
        Err(e) => return fail(&e),
    };
    let reg = registry();
    match auto_rewrite(&src, &reg, &defines, threads, opts) {
        Ok(out) => {
            print!("{}", out.text);
            ExitCode::SUCCESS
        }
        Err(e) => fail(&e),
    }
}

fn model(a: ModelArgs) -> ExitCode {
    if let Some(g) = a.clock {
        if !(g > 0.0 && g.is_finite()) {
            return fail("--clock: need a positive number of GHz");
        }
    }
    if a.threads == Some(0) {
        return fail("-j: need at least one thread");
    }
    if let Some(l) = a.line_ns {
        if !(l > 0.0 && l.is_finite()) {
            return fail("--line-ns: need a positive number of ns");
        }
    }
    if !(a.duration > 0.0 && a.duration <= 60.0) {
        return fail("--duration: between 0 and 60 seconds");
    }
    if let Some(sh) = &a.shared {
        if !(sh.cpus > 0.0 && sh.cpus.is_finite()) {
            return fail("--cpus: need a positive number of CPUs");
        }
        if !(sh.other_ns >= 0.0 && sh.other_ns.is_finite()) {
            return fail("--generator-ns: need a number of ns, 0 or more");
        }
        if !(sh.thread_share > 0.0 && sh.thread_share <= 1.0) {
            return fail("--thread-share: need a share of a core, above 0 and at most 1");
        }
    }
    let wakes = a
        .shared
        .as_ref()
        .map(|sh| (sh.wake_ns, sh.wake_packets))
        .or(a.idle_wakes.as_ref().map(|w| (w.wake_ns, w.wake_packets)));
    if let Some((wake_ns, wake_packets)) = wakes {
        if !(wake_ns >= 0.0 && wake_ns.is_finite()) {
            return fail("--wake-ns: need a number of ns, 0 or more");
        }
        if !(wake_packets >= 0.0 && wake_packets.is_finite())
            || (wake_ns > 0.0 && wake_packets < 1.0)
        {
            return fail("--wake-packets: need a number of packets, 1 or more, with --wake-ns");
        }
    }
    let traffic = match a.traffic.as_deref().map(profile::parse_traffic) {
        None => None,
        Some(Ok(t)) => Some(t),
        Some(Err(e)) => return fail(&e),
    };
    if let Some(path) = &a.system {
        return match profile::system_report(path, a.clock, a.threads, traffic.as_ref()) {
            Ok(t) => {
                print!("{t}");
                ExitCode::SUCCESS
            }
            Err(e) => fail(&e),
        };
    }
    let policy: SchedPolicy = match a.sched.parse() {
        Ok(p) => p,
        Err(e) => return fail(&e),
    };
    // A configuration that cannot be read fails before any measurement.
    let loaded = if a.validate {
        None
    } else {
        match load(&a.input) {
            Ok(x) => Some(x),
            Err(e) => return fail(&e),
        }
    };
    let earlier = paraclick_model::machine::Machine::cached();
    // How this machine was measured comes after the answer: the answer
    // first. A measurement about to take a while is announced.
    let mut notes = String::new();
    if earlier.is_none() || a.recalibrate {
        eprintln!("paraclick model: measuring this machine first (its figures are cached)");
    }
    let (mut machine, how) =
        match paraclick_model::machine::Machine::load_or_calibrate(a.recalibrate) {
            Ok(m) => m,
            Err(e) => return fail(&e),
        };
    notes.push_str(&format!(
        "paraclick model: system model {how} ({})\n",
        paraclick_model::machine::cache_path()
            .map(|p| p.display().to_string())
            .unwrap_or_default()
    ));
    let reg = registry();
    if machine.queue_hop.is_empty() || a.recalibrate {
        match hop::calibrate(&reg, 3, 0.3) {
            Ok((mut pts, hop_notes)) => {
                notes.push_str(&hop_notes);
                // A batch size met in one state only keeps how its hop grew
                // with the line time in an earlier calibration that met both.
                for p in pts.iter_mut().filter(|p| p.per_line.is_none()) {
                    p.per_line = earlier
                        .iter()
                        .flat_map(|m| m.queue_hop.iter())
                        .find(|o| o.batch == p.batch)
                        .and_then(|o| o.per_line);
                }
                machine.queue_hop = pts;
                if let Err(e) = machine.save() {
                    notes.push_str(&format!("paraclick model: not cached: {e}\n"));
                }
            }
            Err(e) => notes.push_str(&format!(
                "paraclick model: queue hop not measured ({e}); using the ring's crossing cost\n"
            )),
        }
    }
    if a.validate {
        eprint!("{notes}");
        return validate::run(&a.input, &reg, &machine, a.duration, a.rounds.max(1));
    }
    let Some((src, defines)) = loaded else {
        return fail("no configuration");
    };
    let mut whatif = paraclick_model::app::WhatIf {
        clock_ghz: a.clock,
        packet_bytes: traffic.as_ref().map(|t| t.mean()),
        core_share: Vec::new(),
        line_ns: a.line_ns,
    };
    // A device router's twin: profiled as it is, then charged the
    // device's measured terms.
    let twin = match &a.device {
        None => None,
        Some(d) => match profile::profile_app(&src, &reg, &defines, a.duration) {
            Ok((app, pnotes)) => {
                notes.push_str(&pnotes);
                if a.dedicated {
                    // A whole core per thread, relative to the timing
                    // run's share.
                    let then = app.core_share.clamp(1e-3, 1.0);
                    whatif.core_share = vec![1.0 / then; a.threads.unwrap_or(1).max(1)];
                }
                Some(app.with_device_twin(d))
            }
            Err(e) => {
                eprint!("{notes}");
                return fail(&e);
            }
        },
    };
    match profile::config_model(
        &src,
        &reg,
        &defines,
        a.threads.unwrap_or(1),
        policy,
        &whatif,
        &machine,
        a.duration,
        twin.as_ref(),
    ) {
        Ok(m) => {
            if let Some(d) = &a.device {
                println!(
                    "device terms ({}): {:.0} ns per packet received, {:.0} ns per packet sent",
                    d.method, d.rx_ns, d.tx_ns
                );
            }
            let ring = a.device.as_ref().and_then(|d| d.ring_pps.map(|r| (d, r)));
            if ring.is_none() && a.shared.is_none() && a.idle_wakes.is_none() {
                print!("{}", m.text);
            } else {
                let body = m
                    .text
                    .trim_end()
                    .rsplit_once('\n')
                    .map(|(b, _)| b)
                    .unwrap_or("");
                println!("{body}");
                // The CPUs shared with a generator: the rate where the
                // router's and the generator's demand fill them.
                let mut rate = m.mlffr;
                if let Some(sh) = &a.shared {
                    let r = sh.solve(m.mlffr, &m.thread_ns);
                    println!(
                        "shared CPUs: {:.2} in all, generator {:.0} ns per packet, router threads at most {:.2} of a core each; router {} ns per packet ({}{}): {:.0} pps, router {:.2} CPUs + generator {:.2}; limit: {}",
                        sh.cpus,
                        sh.other_ns,
                        sh.thread_share,
                        (m.thread_ns.iter().sum::<f64>() + r.wake_ns_per_packet).round(),
                        m.thread_ns
                            .iter()
                            .map(|x| format!("{x:.0}"))
                            .collect::<Vec<_>>()
                            .join(" + "),
                        if r.wake_ns_per_packet > 0.0 {
                            format!(
                                " + wake-ups {:.0} ns / {:.0} packets = {:.0}",
                                sh.wake_ns, sh.wake_packets, r.wake_ns_per_packet
                            )
                        } else {
                            String::new()
                        },
                        r.rate,
                        r.router_cpus,
                        r.other_cpus,
                        if r.limit == "cpus" {
                            "the router and the generator fill the CPUs"
                        } else {
                            "each router thread at its share of a core"
                        }
                    );
                    rate = r.rate;
                }
                // Wake-ups on cores of their own: only in the time the
                // packets leave, so the saturated rate stands; shown with
                // the CPU per packet they add at lower rates.
                if let Some(w) = &a.idle_wakes {
                    let at = |r: f64| {
                        m.thread_ns
                            .iter()
                            .map(|&t| w.ns_per_packet_at(r, t))
                            .sum::<f64>()
                    };
                    println!(
                        "idle wake-ups: {:.0} ns each, at most one per {:.1} packets, in the time the packets leave: \
                         router {:.0} ns per packet at the saturated {:.0} pps, {:.0} at half that rate",
                        w.wake_ns,
                        w.wake_packets,
                        at(rate),
                        rate,
                        at(rate / 2.0)
                    );
                }
                // The wake-up term: the rings overflow below saturation.
                if let Some((d, ring)) = ring {
                    println!(
                        "saturated {rate:.0} pps; receive rings ({}) loss-free up to {ring:.0} pps: {}",
                        d.method,
                        if ring < rate {
                            "the rings overflow before the threads saturate"
                        } else {
                            "the threads saturate first"
                        }
                    );
                    rate = d.loss_free(rate);
                }
                println!("MLFFR {rate:.0} pps");
            }
            let _ = std::io::stdout().flush();
            eprint!("{notes}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprint!("{notes}");
            fail(&e)
        }
    }
}
