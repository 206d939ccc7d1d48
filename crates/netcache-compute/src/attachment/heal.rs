//! Heal: every server's cache refreshed from Neutron in batches — one port list
//! per batch of servers, the floating IPs of the servers' projects once per
//! pass, network details from the catalog; the store read a batch at a time.
//! Membership never changes here: ports that carry a server's `device_id`
//! without a VIF record are recorded as ghost sightings, never added
//! (invariant 1); VIFs whose ports are gone or reassigned are recorded as lost.
//!
//! Floating IPs are listed by the servers' projects, so one another project
//! associated with a server's port (only an admin can) is not seen here; the
//! `network-changed` event Neutron sends for it brings it in. Processes whose
//! cache options differ find each other's found-right records stale and
//! rebuild: passes cost more, a cache is never wrong.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use futures::stream::FuturesOrdered;
use futures::{StreamExt, TryFutureExt};
use netcache_domain::action::{Action, ActionEvent};
use netcache_domain::cache::{
    self, CacheInputs, FoundRight, InputsDigest, LostReason, LostVif, Observed, OnLost, Seen,
};
use netcache_domain::change::Change;
use netcache_domain::gc::ForeignPolicy;
use netcache_domain::ghost::{self, Ghost, GhostSighting};
use netcache_domain::heal_shard::HealShard;
use netcache_domain::network_info::{NetworkInfo, TextDigest};
use netcache_domain::neutron::{FloatingIp, Port};
use netcache_domain::server::WatchedServer;
use netcache_domain::vif::{PortDetails, VifRecord, VifState};
use netcache_domain::{NetworkId, PortId, ProjectId, ServerId};
use netcache_neutron::{FloatingIpFilter, PortFilter};
use netcache_store::{CacheGeneration, CacheText, DeletedWatch};
use tokio::time::Instant;
use tracing::{info, warn};

use crate::attachment::catalog::Topology;
use crate::attachment::heal_sweep::{Sweep, WatchedPages};
use crate::{Compute, Result, new_request_id};

/// What one heal pass found and did.
#[derive(Clone, Debug, Default)]
pub struct HealReport {
    pub servers: usize,
    /// The shards this pass swept (every one, for a whole pass).
    pub shards: Vec<HealShard>,
    pub batches: usize,
    pub cache_writes: usize,
    /// Servers whose inputs and cache were as a pass before (of any process)
    /// found them right: not rebuilt.
    pub known_right: usize,
    /// Cache writes skipped because a concurrent change won (retried next pass).
    pub conflicts: usize,
    pub lost: Vec<(ServerId, LostVif)>,
    pub ghosts: Vec<Ghost>,
    /// Batches this pass could not heal (a Neutron or store error), each
    /// logged with its servers' ids; the next pass heals them again.
    pub batch_failures: usize,
}

/// Neutron's view of a batch of servers, fetched with a fixed number of calls.
pub(crate) struct Observation {
    /// Every port that carries one of the batch's device ids, plus every port a
    /// VIF record of the batch names; shared with each server's `Observed`.
    pub ports: HashMap<PortId, Arc<Port>>,
    /// The ports that carry each device id, by id.
    by_device: HashMap<String, Vec<PortId>>,
    pub floating_ips: HashMap<PortId, Vec<FloatingIp>>,
    pub topology: Topology,
}

impl Observation {
    /// What Neutron said about each of these VIFs' ports.
    pub fn observed(&self, vifs: &[VifRecord]) -> HashMap<PortId, Observed> {
        vifs.iter()
            .filter(|v| v.is_attached())
            .map(|v| {
                let seen = match self.ports.get(&v.port_id) {
                    Some(port) => Observed::Present {
                        port: Arc::clone(port),
                        floating_ips: self.floating_ips.get(&v.port_id).cloned().unwrap_or_default(),
                    },
                    None => Observed::Gone,
                };
                (v.port_id.clone(), seen)
            })
            .collect()
    }

    /// What a server's rebuild reads of this observation.
    pub fn seen(&self) -> Seen<'_> {
        Seen {
            ports: &self.ports,
            floating_ips: &self.floating_ips,
            networks: &self.topology.networks,
            subnets: &self.topology.subnets,
        }
    }

    /// Ports that carry this device id, by id.
    pub fn ports_of(&self, device_id: &str) -> Vec<&Port> {
        self.by_device
            .get(device_id)
            .into_iter()
            .flatten()
            .filter_map(|id| self.ports.get(id).map(Arc::as_ref))
            .collect()
    }
}

/// The floating IPs of the projects a pass has listed, by port.
#[derive(Default)]
pub(crate) struct ProjectFloatingIps {
    projects: HashSet<ProjectId>,
    pub by_port: HashMap<PortId, Vec<FloatingIp>>,
}

/// What heal reads of a batch before rebuilding it.
struct BatchRead<'a> {
    servers: &'a [WatchedServer],
    caches: HashMap<ServerId, CacheText>,
    vifs: HashMap<ServerId, Vec<VifRecord>>,
    /// The details of the recorded VIFs' networks.
    recorded: Topology,
    ports: Vec<Port>,
}

/// What heal holds of a stored cache to compare its rebuild with.
pub(crate) enum Stored<'a> {
    Text(&'a CacheText),
    /// The text digest recorded of a rebuild found equal to the cache at this
    /// generation: every write of a cache advances its generation.
    Digest(TextDigest, i64),
}

/// What heal did with one server's cache.
pub(crate) enum Healed {
    /// Found right: its rebuild's text has this digest.
    Right(TextDigest),
    /// Written, left to the writer that changed it since, or not heal's to
    /// write (a deleted server).
    Written,
    /// The rebuild keeps an entry of the stored cache, which only its text has.
    NeedsText,
}

/// Every live server's cache generation, read before Neutron is, with what
/// a pass found of the cache at it.
type Generations = HashMap<ServerId, CacheGeneration>;

/// Batches whose reads are in flight while one is rebuilt: Neutron has lists
/// to build while netcache decodes and rebuilds. One left each waiting for the
/// other; two and three measured 1.4 and 1.3 times the raw lists' time.
const READS_AHEAD: usize = 3;

/// What a heal pass carries from batch to batch.
struct Pass {
    now: DateTime<Utc>,
    /// This pass's number: it rebuilds the caches [`cache::rebuild_due`] in
    /// it whatever their inputs' digest, each compared with the text digest
    /// recorded of it where there is one, not read.
    number: u64,
    floating_ips: ProjectFloatingIps,
    /// Ghost sightings recorded before this pass; those left are stale.
    sightings: HashMap<PortId, GhostSighting>,
    seen_ghosts: HashSet<PortId>,
    /// Servers of the batches that failed: their sightings were not looked at.
    failed: HashSet<ServerId>,
    report: HealReport,
}

impl Compute {
    /// One heal pass over every server (and recently deleted ones, for ghosts):
    /// `netcache heal`, the bench and the tests, whatever the shards' leases.
    pub async fn heal(&self) -> Result<HealReport> {
        self.heal_pass(Sweep::whole()).await
    }

    /// The heal loop's pass: the shards no process swept within the interval,
    /// each taken with its lease as the pass reaches it (see `heal_sweep`), so
    /// the deployment's processes share a sweep instead of each repeating it.
    pub async fn heal_due_shards(&self) -> Result<HealReport> {
        self.heal_pass(Sweep::leased(self.owner().label())).await
    }

    async fn heal_pass(&self, sweep: Sweep) -> Result<HealReport> {
        let started = Instant::now();
        let now = self.clock.now();
        // A server with an operation in flight is that operation's to write; one
        // accepted after `now` is not this pass's (its operation may be missing
        // from `busy`). A deleted server whose creates all settled can gain no
        // port with its id and our marker; one some other project gives its id
        // is foreign, and only worth finding when GC may unbind foreign ghosts.
        let mut pages = WatchedPages::new(
            DeletedWatch {
                since: self.watch_start(now),
                every: self.config.gc.policy.foreign == ForeignPolicy::Unbind,
            },
            sweep,
        );
        // The pass's reads, each a statement of its own, sent at once. The
        // generations are read before Neutron is: a cache written after the
        // floating IPs were listed fails the compare-and-swap of this pass.
        let (busy, sightings, generations, mut page) = tokio::try_join!(
            self.busy_servers(),
            self.store.ghost_sightings().err_into(),
            self.store.live_cache_generations().err_into(),
            self.next_watched_page(&mut pages)
        )?;
        let number = self.heal_passes.load(std::sync::atomic::Ordering::Relaxed);
        let mut pass = Pass {
            now,
            number,
            floating_ips: ProjectFloatingIps::default(),
            sightings: sightings.into_iter().map(|s| (s.port_id.clone(), s)).collect(),
            seen_ghosts: HashSet::new(),
            failed: HashSet::new(),
            report: HealReport::default(),
        };
        while let Some(watched) = page {
            let servers: Vec<WatchedServer> = watched
                .into_iter()
                .filter(|s| s.created_at <= now && !busy.contains(&s.id))
                .collect();
            pass.report.servers += servers.len();
            // The next page is read while this one is healed.
            let (next, healed) = tokio::join!(
                biased;
                self.next_watched_page(&mut pages),
                self.heal_page(&servers, &generations, &mut pass)
            );
            healed?;
            page = next?;
        }
        let Pass {
            sightings,
            seen_ghosts,
            failed,
            mut report,
            ..
        } = pass;
        report.shards = pages.swept();
        // Sightings of ports that are no longer ghosts (deleted, attached, moved);
        // those of a server this pass left to its operation, or failed to heal,
        // or of a shard it did not sweep, were not looked at.
        let stale: Vec<Change> = sightings
            .into_values()
            .filter(|s| !seen_ghosts.contains(&s.port_id))
            .filter(|s| {
                let server = s.device_id.parse::<ServerId>().ok();
                pages.covers(server) && !server.is_some_and(|id| busy.contains(&id) || failed.contains(&id))
            })
            .map(|s| Change::DeleteGhostSighting { port_id: s.port_id })
            .collect();
        if !stale.is_empty() {
            self.store.commit(stale).await?;
        }
        let elapsed = started.elapsed();
        self.heal_passes.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        metrics::counter!("netcache_heal_passes_total").increment(1);
        metrics::counter!("netcache_heal_servers_total").increment(report.servers as u64);
        metrics::counter!("netcache_heal_shards_swept_total").increment(report.shards.len() as u64);
        metrics::histogram!("netcache_heal_pass_duration_seconds").record(elapsed.as_secs_f64());
        info!(
            servers = report.servers,
            shards = report.shards.len(),
            batches = report.batches,
            known_right = report.known_right,
            cache_writes = report.cache_writes,
            lost = report.lost.len(),
            ghosts = report.ghosts.len(),
            batch_failures = report.batch_failures,
            elapsed_ms = elapsed.as_millis() as u64,
            "Healed {} servers of {} shards in {} batches ({} caches known right, not rebuilt): {} cache writes, {} lost ports, {} ghosts, {} batches failed",
            report.servers,
            report.shards.len(),
            report.batches,
            report.known_right,
            report.cache_writes,
            report.lost.len(),
            report.ghosts.len(),
            report.batch_failures
        );
        Ok(report)
    }

    /// Heals a page of servers batch by batch, the reads of the next
    /// [`READS_AHEAD`] batches (the store's and Neutron's list) in flight while
    /// one is rebuilt: Neutron builds the lists to come while netcache decodes
    /// and rebuilds, where one waited for the other. A batch that fails is
    /// counted and left to the next pass; the others go on.
    async fn heal_page(&self, servers: &[WatchedServer], generations: &Generations, pass: &mut Pass) -> Result<()> {
        let batch_size = self.config.heal.batch_size.max(1);
        let mut batches = servers.chunks(batch_size);
        let mut reads = FuturesOrdered::new();
        for batch in batches.by_ref().take(READS_AHEAD) {
            reads.push_back(self.read_tagged(batch, generations));
        }
        let (listed, first) = tokio::join!(self.list_floating_ips_of(servers, &mut pass.floating_ips), reads.next());
        if let Err(e) = listed {
            // Rebuilt without them, the caches would lose their floating IPs.
            for batch in servers.chunks(batch_size) {
                batch_failed(batch, &e, pass);
            }
            return Ok(());
        }
        let mut read = first;
        while let Some((batch, result)) = read {
            if let Some(next) = batches.next() {
                reads.push_back(self.read_tagged(next, generations));
            }
            read = match result {
                Ok(batch_read) => {
                    // The reads are polled first, so the next list is sent before
                    // this batch's rebuild, which seldom yields, runs.
                    let (following, healed) =
                        tokio::join!(biased; reads.next(), self.heal_batch(batch_read, generations, pass));
                    if let Err(e) = healed {
                        batch_failed(batch, &e, pass);
                    }
                    following
                }
                Err(e) => {
                    batch_failed(batch, &e, pass);
                    reads.next().await
                }
            };
        }
        Ok(())
    }

    /// [`Compute::read_batch`], with the batch it is of.
    async fn read_tagged<'a>(
        &self,
        servers: &'a [WatchedServer],
        generations: &Generations,
    ) -> (&'a [WatchedServer], Result<BatchRead<'a>>) {
        (servers, self.read_batch(servers, generations).await)
    }

    /// A batch's VIF records and their networks' details (asked of Neutron
    /// if the catalog's are stale), and the caches of its servers not found
    /// right at their generation, read while Neutron lists its ports.
    async fn read_batch<'a>(&self, servers: &'a [WatchedServer], generations: &Generations) -> Result<BatchRead<'a>> {
        let unknown: Vec<ServerId> = servers
            .iter()
            .filter(|s| !s.is_deleted() && generations.get(&s.id).is_none_or(|g| g.found_right.is_none()))
            .map(|s| s.id)
            .collect();
        let records_and_networks = async {
            let vifs = self.records_of(servers).await?;
            let networks: Vec<NetworkId> = vifs.values().flatten().map(|v| v.network_id.clone()).collect();
            let recorded = self.catalog.topology(self.neutron.as_ref(), &networks).await?;
            Ok((vifs, recorded))
        };
        let (caches, (vifs, recorded), ports) = tokio::try_join!(
            self.caches_of(&unknown),
            records_and_networks,
            self.ports_of_devices(servers)
        )?;
        Ok(BatchRead {
            servers,
            caches,
            vifs,
            recorded,
            ports,
        })
    }

    /// Heals one batch from its reads: one observation of Neutron, each live
    /// server's cache not found right at its generation with these inputs
    /// (compared with the text digest recorded of it there, else read now, in
    /// one statement), and, in one transaction, its ghosts' sightings and the
    /// caches found right that were not recorded so. Each cache is written
    /// under the pass's generation, read before Neutron was, so a change
    /// committed since fails the compare-and-swap.
    async fn heal_batch(&self, read: BatchRead<'_>, generations: &Generations, pass: &mut Pass) -> Result<()> {
        let BatchRead {
            servers: batch,
            mut caches,
            vifs,
            recorded,
            ports,
        } = read;
        pass.report.batches += 1;
        let observation = self
            .observation(ports, &vifs, Some(&pass.floating_ips.by_port), recorded)
            .await?;
        let seen = observation.seen();
        // Each live server not known right, with its inputs' digest at the
        // pass's generation, and what a pass found of its cache there.
        let mut rebuilt = Vec::new();
        for server in batch.iter().filter(|s| !s.is_deleted()) {
            let cache = generations.get(&server.id);
            let inputs = cache.map(|c| {
                let digest = InputsDigest::of(server.id, &vifs[&server.id], &seen, &self.config.cache);
                (digest, c.generation)
            });
            let found = cache.and_then(|c| c.found_right);
            match found {
                Some(f)
                    if inputs.is_some_and(|(digest, _)| digest == f.inputs)
                        && !cache::rebuild_due(server.id, pass.number) =>
                {
                    pass.report.known_right += 1;
                }
                _ => rebuilt.push((server, inputs, found)),
            }
        }
        let mut changes = Vec::new();
        // Texts are read (in one statement) only where no digest stands in
        // for them, and then for the rebuilds that keep a stored entry.
        while !rebuilt.is_empty() {
            let unread: Vec<ServerId> = rebuilt
                .iter()
                .filter(|(s, _, found)| found.is_none() && !caches.contains_key(&s.id))
                .map(|(s, ..)| s.id)
                .collect();
            if !unread.is_empty() {
                caches.extend(self.caches_of(&unread).await?);
            }
            let mut needs_text = Vec::new();
            for (server, inputs, found) in rebuilt {
                let stored = match (caches.get_mut(&server.id), found, inputs) {
                    (Some(stored), ..) => {
                        if let Some((_, generation)) = inputs {
                            stored.generation = generation;
                        }
                        Stored::Text(stored)
                    }
                    (None, Some(found), Some((_, generation))) => Stored::Digest(found.text, generation),
                    _ => continue,
                };
                let healed = self
                    .heal_server(
                        server,
                        stored,
                        inputs.map(|(digest, _)| digest),
                        &vifs[&server.id],
                        &observation,
                        pass.now,
                        &mut pass.report,
                    )
                    .await?;
                match (healed, inputs) {
                    (Healed::Right(text), Some((digest, generation))) => {
                        let now = FoundRight { inputs: digest, text };
                        if found != Some(now) {
                            changes.push(Change::RecordFoundRight {
                                server_id: server.id,
                                generation,
                                found: now,
                            });
                        }
                    }
                    (Healed::NeedsText, _) => needs_text.push((server, inputs, None)),
                    _ => {}
                }
            }
            rebuilt = needs_text;
        }
        for server in batch {
            let records = &vifs[&server.id];
            for g in self.ghosts_of(server, records, &observation).await? {
                pass.seen_ghosts.insert(g.port_id.clone());
                changes.push(Change::UpsertGhostSighting(next_sighting(
                    pass.sightings.remove(&g.port_id),
                    &g,
                    pass.now,
                )));
                pass.report.ghosts.push(g);
            }
        }
        if !changes.is_empty() {
            self.store.commit(changes).await?;
        }
        Ok(())
    }

    /// Deletions after this are still watched for ghosts.
    pub(crate) fn watch_start(&self, now: DateTime<Utc>) -> DateTime<Utc> {
        now.checked_sub_signed(self.ghost_watch())
            .unwrap_or(DateTime::UNIX_EPOCH)
    }

    /// The stored caches of these servers, as text: most are only compared
    /// with their rebuild, never decoded.
    pub(crate) async fn caches_of(&self, servers: &[ServerId]) -> Result<HashMap<ServerId, CacheText>> {
        Ok(self.store.cache_texts_of(servers).await?)
    }

    /// Lists every floating IP of the live servers' projects not listed yet,
    /// by port: one list per 100 projects (not one per batch of servers).
    pub(crate) async fn list_floating_ips_of(
        &self,
        servers: &[WatchedServer],
        listed: &mut ProjectFloatingIps,
    ) -> Result<()> {
        let mut projects: Vec<ProjectId> = servers
            .iter()
            .filter(|s| !s.is_deleted() && !listed.projects.contains(&s.project_id))
            .map(|s| s.project_id.clone())
            .collect();
        projects.sort();
        projects.dedup();
        if projects.is_empty() {
            return Ok(());
        }
        let filter = FloatingIpFilter {
            project_ids: projects,
            ..FloatingIpFilter::default()
        };
        for fip in self.neutron.list_floating_ips(&filter).await? {
            if let Some(port) = fip.port_id.clone() {
                listed.by_port.entry(port).or_default().push(fip);
            }
        }
        // Listed only once the list came: a page whose list failed is healed
        // by a later pass, not without its floating IPs.
        listed.projects.extend(filter.project_ids);
        Ok(())
    }

    /// Ports Neutron gives the server that are not its VIFs. Records read before
    /// (or while) Neutron was may miss a port an operation recorded since: a
    /// server with candidates is read again, and one with an operation in flight
    /// is its own.
    pub(crate) async fn ghosts_of(
        &self,
        server: &WatchedServer,
        records: &[VifRecord],
        observation: &Observation,
    ) -> Result<Vec<Ghost>> {
        let device_id = server.id.to_string();
        let ports = observation.ports_of(&device_id);
        let candidates = ghost::classify_ports(&device_id, records, ports.iter().copied(), &self.deployment);
        if candidates.is_empty() {
            return Ok(candidates);
        }
        if self.store.operation(server.id).await?.is_some() {
            return Ok(vec![]);
        }
        let records = self.store.vifs(server.id).await?;
        Ok(ghost::classify_ports(&device_id, &records, ports, &self.deployment))
    }

    /// The VIF records of a batch of servers; every server has an entry.
    pub(crate) async fn records_of(&self, servers: &[WatchedServer]) -> Result<HashMap<ServerId, Vec<VifRecord>>> {
        let ids: Vec<ServerId> = servers.iter().map(|s| s.id).collect();
        let mut records = self.store.vifs_of(&ids).await?;
        for id in ids {
            records.entry(id).or_default();
        }
        Ok(records)
    }

    /// Neutron's view of a batch: one port list by device id, one by port id for
    /// recorded ports that list missed (reassigned ones; usually no call), the
    /// floating IPs (from `listed`, else one list), and network details from the
    /// catalog.
    pub(crate) async fn observe(
        &self,
        servers: &[WatchedServer],
        vifs: &HashMap<ServerId, Vec<VifRecord>>,
        listed: Option<&HashMap<PortId, Vec<FloatingIp>>>,
    ) -> Result<Observation> {
        let ports = self.ports_of_devices(servers).await?;
        self.observation(ports, vifs, listed, Topology::default()).await
    }

    /// The ports that carry these servers' device ids: one list.
    async fn ports_of_devices(&self, servers: &[WatchedServer]) -> Result<Vec<Port>> {
        let filter = PortFilter {
            device_ids: servers.iter().map(|s| s.id.to_string()).collect(),
            ..PortFilter::default()
        };
        Ok(self.neutron.list_ports(&filter).await?)
    }

    /// The rest of [`Compute::observe`], from the list of the servers' ports
    /// and the details already known of some networks.
    async fn observation(
        &self,
        ports: Vec<Port>,
        vifs: &HashMap<ServerId, Vec<VifRecord>>,
        listed: Option<&HashMap<PortId, Vec<FloatingIp>>>,
        known: Topology,
    ) -> Result<Observation> {
        let mut ports: HashMap<PortId, Arc<Port>> = ports.into_iter().map(|p| (p.id.clone(), Arc::new(p))).collect();
        let missing: Vec<PortId> = vifs
            .values()
            .flatten()
            .filter(|v| v.is_attached() && !ports.contains_key(&v.port_id))
            .map(|v| v.port_id.clone())
            .collect();
        if !missing.is_empty() {
            let found = self
                .neutron
                .list_ports(&PortFilter {
                    ids: missing,
                    ..PortFilter::default()
                })
                .await?;
            ports.extend(found.into_iter().map(|p| (p.id.clone(), Arc::new(p))));
        }
        let recorded: Vec<PortId> = vifs
            .values()
            .flatten()
            .filter(|v| v.is_attached() && ports.contains_key(&v.port_id))
            .map(|v| v.port_id.clone())
            .collect();
        let mut floating_ips: HashMap<PortId, Vec<FloatingIp>> = HashMap::new();
        if let Some(listed) = listed {
            for port in recorded {
                if let Some(fips) = listed.get(&port) {
                    floating_ips.insert(port, fips.clone());
                }
            }
        } else if !recorded.is_empty() {
            for fip in self
                .neutron
                .list_floating_ips(&FloatingIpFilter {
                    port_ids: recorded,
                    ..FloatingIpFilter::default()
                })
                .await?
            {
                if let Some(port) = fip.port_id.clone() {
                    floating_ips.entry(port).or_default().push(fip);
                }
            }
        }
        let networks: Vec<_> = ports
            .values()
            .map(|p| p.network_id.clone())
            .filter(|id| !known.networks.contains_key(id))
            .collect();
        let mut topology = known;
        if !networks.is_empty() {
            let more = self.catalog.topology(self.neutron.as_ref(), &networks).await?;
            topology.networks.extend(more.networks);
            topology.subnets.extend(more.subnets);
        }
        let mut by_device: HashMap<String, Vec<PortId>> = HashMap::new();
        for port in ports.values() {
            by_device
                .entry(port.device_id.clone())
                .or_default()
                .push(port.id.clone());
        }
        for ids in by_device.values_mut() {
            ids.sort();
        }
        Ok(Observation {
            ports,
            by_device,
            floating_ips,
            topology,
        })
    }

    /// Rebuilds one server's cache from an observation; writes it only if it
    /// changed, and only if nobody wrote it since it was read, recording it
    /// found right if the digest of its inputs is given. Whether the stored
    /// cache and VIF records were right as they were.
    #[expect(clippy::too_many_arguments, reason = "one server's part of a batch's heal")]
    pub(crate) async fn heal_server(
        &self,
        server: &WatchedServer,
        stored: Stored<'_>,
        inputs: Option<InputsDigest>,
        vifs: &[VifRecord],
        observation: &Observation,
        now: DateTime<Utc>,
        report: &mut HealReport,
    ) -> Result<Healed> {
        if server.is_deleted() {
            return Ok(Healed::Written);
        }
        let restored = restored_vifs(server, vifs, observation);
        let vifs: &[VifRecord] = &vifs
            .iter()
            .map(|v| restored.iter().find(|r| r.port_id == v.port_id).unwrap_or(v).clone())
            .collect::<Vec<_>>();
        let observed = observation.observed(vifs);
        let rebuild = |previous: &NetworkInfo| {
            cache::build_network_info(&CacheInputs {
                server_id: server.id,
                vifs,
                previous,
                observed: &observed,
                networks: &observation.topology.networks,
                subnets: &observation.topology.subnets,
                options: &self.config.cache,
            })
        };
        // The stored cache is decoded only if the rebuild keeps an entry of it;
        // otherwise the rebuild is compared with it as text, or with the text
        // digest of a rebuild found equal to it. A cache stored in another key
        // order than netcache writes is written once more, no harm.
        let mut outcome = rebuild(&NetworkInfo::default());
        let (unchanged, expected_generation) = match stored {
            Stored::Digest(..) if outcome.kept_previous => return Ok(Healed::NeedsText),
            Stored::Digest(text, generation) => {
                let now = outcome.info.text_digest();
                ((now == text).then_some(now), generation)
            }
            Stored::Text(stored) if outcome.kept_previous => {
                let previous = stored.decode()?.info;
                outcome = rebuild(&previous);
                let unchanged = outcome.info == previous;
                (unchanged.then(|| outcome.info.text_digest()), stored.generation)
            }
            Stored::Text(stored) => (outcome.info.digest_if_written_as(&stored.json), stored.generation),
        };
        let mut vif_changes = Vec::new();
        if !outcome.lost.is_empty() {
            vif_changes.extend(self.lost_changes(server, vifs, &outcome.lost, now));
        }
        vif_changes.extend(restored.iter().cloned().map(Change::UpdateVif));
        vif_changes.extend(refreshed_details(vifs, &observed, &outcome.lost));
        if let Some(text) = unchanged
            && vif_changes.is_empty()
        {
            return Ok(Healed::Right(text));
        }
        // A server this pass skipped as busy may have started an operation since.
        let mut changes = vec![
            Change::RequireIdle { server_id: server.id },
            Change::WriteCache {
                server_id: server.id,
                info: outcome.info.clone(),
                expected_generation,
            },
        ];
        // The written cache is right at its next generation, unless a VIF
        // change advances it further.
        if let Some(inputs) = inputs.filter(|_| vif_changes.is_empty()) {
            changes.push(Change::RecordFoundRight {
                server_id: server.id,
                generation: expected_generation + 1,
                found: FoundRight {
                    inputs,
                    text: outcome.info.text_digest(),
                },
            });
        }
        changes.extend(vif_changes);
        match self.store.commit(changes).await {
            Ok(()) => {
                report.cache_writes += 1;
                metrics::counter!("netcache_cache_writes_total", "source" => "heal").increment(1);
                for vif in &restored {
                    info!(server.id = %server.id, port.id = %vif.port_id, "Port {} is back on server {}; restored", vif.port_id, server.id);
                    metrics::counter!("netcache_restored_vifs_total").increment(1);
                }
                for lost in outcome.lost {
                    warn!(
                        server.id = %server.id, port.id = %lost.port_id, reason = ?lost.reason,
                        "Port {} of server {} is lost: {:?}", lost.port_id, server.id, lost.reason
                    );
                    metrics::counter!("netcache_lost_vifs_total").increment(1);
                    report.lost.push((server.id, lost));
                }
            }
            // An operation or event changed the server since it was read; the next
            // pass sees its result.
            Err(e) if e.is_conflict() || matches!(e, netcache_store::Error::NotFound(_)) => report.conflicts += 1,
            Err(e) => return Err(e.into()),
        }
        Ok(Healed::Written)
    }

    /// Records lost VIFs: in the action log always, and as `lost` records when
    /// the policy drops them from the cache.
    pub(crate) fn lost_changes(
        &self,
        server: &WatchedServer,
        vifs: &[VifRecord],
        lost: &[LostVif],
        now: DateTime<Utc>,
    ) -> Vec<Change> {
        let request_id = new_request_id();
        let mut changes = vec![Change::StartAction(Action {
            server_id: server.id,
            request_id: request_id.clone(),
            action: "netcache_heal".to_owned(),
            project_id: server.project_id.to_string(),
            user_id: "netcache".to_owned(),
            start_time: now,
            message: None,
            events: vec![],
        })];
        for l in lost {
            let why = match &l.reason {
                LostReason::Gone => "Neutron no longer has it".to_owned(),
                LostReason::Reassigned { device_id } => format!("Neutron now gives it to device {device_id:?}"),
            };
            changes.push(Change::AddActionEvent {
                server_id: server.id,
                request_id: request_id.clone(),
                event: ActionEvent::finished(
                    "netcache_port_lost",
                    now,
                    false,
                    Some(format!("port {}: {why}", l.port_id)),
                    None,
                ),
            });
            if self.config.cache.on_lost == OnLost::Drop
                && let Some(vif) = vifs.iter().find(|v| v.port_id == l.port_id)
            {
                changes.push(Change::UpdateVif(VifRecord {
                    state: VifState::Lost,
                    ..vif.clone()
                }));
            }
        }
        changes
    }

    /// Records a ghost sighting outside a heal pass (from an event).
    pub(crate) async fn record_sighting(&self, ghost: &Ghost) -> Result<()> {
        let previous = self.store.ghost_sighting(&ghost.port_id).await?;
        let sighting = next_sighting(previous, ghost, self.clock.now());
        self.commit(vec![Change::UpsertGhostSighting(sighting)]).await?;
        Ok(())
    }
}

/// VIF records whose port details (os-interface's answer) changed in Neutron.
/// VIFs marked lost whose port Neutron gives the server again: attached once more
/// (a port id is never reused, so it is the same port, back).
fn restored_vifs(server: &WatchedServer, vifs: &[VifRecord], observation: &Observation) -> Vec<VifRecord> {
    let device_id = server.id.to_string();
    vifs.iter()
        .filter(|v| v.state == VifState::Lost)
        .filter(|v| {
            observation
                .ports
                .get(&v.port_id)
                .is_some_and(|p| p.carries_device_id(&device_id))
        })
        .map(|v| VifRecord {
            state: VifState::Attached,
            ..v.clone()
        })
        .collect()
}

fn refreshed_details(vifs: &[VifRecord], observed: &HashMap<PortId, Observed>, lost: &[LostVif]) -> Vec<Change> {
    vifs.iter()
        .filter(|v| v.is_attached() && !lost.iter().any(|l| l.port_id == v.port_id))
        .filter_map(|v| match observed.get(&v.port_id) {
            Some(Observed::Present { port, .. }) if !v.details.as_ref().is_some_and(|d| d.describe(port)) => {
                Some(Change::UpdateVif(VifRecord {
                    details: Some(PortDetails::of(port)),
                    ..v.clone()
                }))
            }
            _ => None,
        })
        .collect()
}

/// The sighting after seeing a ghost once more.
fn next_sighting(previous: Option<GhostSighting>, ghost: &Ghost, now: DateTime<Utc>) -> GhostSighting {
    match previous {
        Some(s) => GhostSighting {
            device_id: ghost.device_id.clone(),
            owner: ghost.owner.clone(),
            last_seen: now,
            times_seen: s.times_seen + 1,
            revision_number: ghost.revision_number,
            ..s
        },
        None => GhostSighting {
            port_id: ghost.port_id.clone(),
            device_id: ghost.device_id.clone(),
            owner: ghost.owner.clone(),
            first_seen: now,
            last_seen: now,
            times_seen: 1,
            revision_number: ghost.revision_number,
        },
    }
}

/// Counts a batch the pass could not heal and logs its servers; their
/// sightings are kept, and the next pass heals them again.
fn batch_failed(batch: &[WatchedServer], error: &crate::Error, pass: &mut Pass) {
    pass.report.batch_failures += 1;
    pass.failed.extend(batch.iter().map(|s| s.id));
    metrics::counter!("netcache_heal_batch_failures_total").increment(1);
    let ids: Vec<String> = batch.iter().map(|s| s.id.to_string()).collect();
    warn!(
        servers = %ids.join(","), error = %error,
        "Could not heal a batch of {} servers: {error}; the next pass heals them again", batch.len()
    );
}
