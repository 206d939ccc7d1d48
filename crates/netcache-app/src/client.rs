//! Client commands (`netcache server …`, `netcache interface …`): a small HTTP
//! client of the compute API (and of its image subset) with table or JSON output.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, bail};
use indicatif::ProgressBar;
use serde_json::{Value, json};

#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub enum Output {
    Table,
    Json,
}

/// Whether a command draws progress on stderr.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    Shown,
    Hidden,
}

impl Progress {
    /// Shown only to a person at a terminal, and only while logs are off: a
    /// redrawn progress line and log lines would run into each other.
    #[must_use]
    pub fn on_stderr(logging: bool) -> Self {
        if !logging && std::io::stderr().is_terminal() {
            Self::Shown
        } else {
            Self::Hidden
        }
    }
}

/// Where the compute API and the image subset live under the service's URL.
const COMPUTE: &str = "/v2.1";
const IMAGES: &str = "/image/v2/images";

pub struct ApiClient {
    base: String,
    project: Option<String>,
    token: Option<String>,
    http: reqwest::Client,
}

impl ApiClient {
    pub fn new(base: &str, project: Option<String>, token: Option<String>) -> anyhow::Result<Self> {
        Ok(Self {
            base: base.trim_end_matches('/').to_owned(),
            project,
            token,
            http: reqwest::Client::builder().timeout(Duration::from_secs(60)).build()?,
        })
    }

    /// `path` is under the service's URL (`/v2.1/servers`, `/image/v2/images`).
    async fn call(&self, method: reqwest::Method, path: &str, body: Option<Value>) -> anyhow::Result<Value> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some(project) = &self.project {
            request = request.header("X-Project-Id", project);
        }
        if let Some(token) = &self.token {
            request = request.header("X-Auth-Token", token);
        }
        if let Some(body) = body {
            request = request.json(&body);
        }
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach netcache at {} (is `netcache serve` running?)", self.base))?;
        let status = response.status();
        let text = response.text().await?;
        let value: Value = if text.is_empty() {
            Value::Null
        } else {
            serde_json::from_str(&text).unwrap_or(Value::String(text))
        };
        if !status.is_success() {
            let message = value
                .as_object()
                .and_then(|o| o.values().next())
                .and_then(|e| e.get("message"))
                .and_then(Value::as_str)
                .map_or_else(|| value.to_string(), str::to_owned);
            bail!("{method} {path} failed: HTTP {}: {message}", status.as_u16());
        }
        Ok(value)
    }

    /// `GET` of a compute API path (`/servers`, not `/v2.1/servers`).
    pub async fn get(&self, path: &str) -> anyhow::Result<Value> {
        self.call(reqwest::Method::GET, &format!("{COMPUTE}{path}"), None).await
    }

    pub async fn post(&self, path: &str, body: Value) -> anyhow::Result<Value> {
        self.call(reqwest::Method::POST, &format!("{COMPUTE}{path}"), Some(body))
            .await
    }

    pub async fn delete(&self, path: &str) -> anyhow::Result<()> {
        self.call(reqwest::Method::DELETE, &format!("{COMPUTE}{path}"), None)
            .await
            .map(|_| ())
    }

    /// A server's id from its id or its name, as the `openstack` CLI finds one:
    /// a UUID is taken as the id; anything else must be the exact name of one
    /// server. Nova's `name` filter is a regular-expression search (netcache's a
    /// substring match), so the list it returns is narrowed to the exact name here.
    pub async fn server_id(&self, name_or_id: &str) -> anyhow::Result<String> {
        if uuid::Uuid::try_parse(name_or_id).is_ok() {
            return Ok(name_or_id.to_owned());
        }
        let listed = self.get(&format!("/servers?{}", query("name", name_or_id))).await?;
        let ids: Vec<&str> = list_items(&listed["servers"])
            .filter(|s| s["name"] == name_or_id)
            .filter_map(|s| s["id"].as_str())
            .collect();
        match ids.as_slice() {
            [] => bail!("No server with a name or ID of '{name_or_id}' exists."),
            [id] => Ok((*id).to_owned()),
            _ => bail!(
                "More than one server exists with the name '{name_or_id}': {}",
                ids.join(", ")
            ),
        }
    }

    /// The `imageRef` for a new server: the service's first image when none is
    /// given, a UUID as is, else the id of the image with that exact name (Glance's
    /// `name` filter is exact), as the `openstack` CLI resolves `--image`. The id
    /// is what lets `openstack server list` name the image.
    pub async fn image_ref(&self, image: Option<&str>) -> anyhow::Result<String> {
        let listed = match image {
            Some(id) if uuid::Uuid::try_parse(id).is_ok() => return Ok(id.to_owned()),
            Some(name) => {
                self.call(reqwest::Method::GET, &format!("{IMAGES}?{}", query("name", name)), None)
                    .await?
            }
            None => self.call(reqwest::Method::GET, IMAGES, None).await?,
        };
        let first = listed["images"].as_array().and_then(|images| images.first());
        match (first.and_then(|i| i["id"].as_str()), image) {
            (Some(id), _) => Ok(id.to_owned()),
            (None, Some(name)) => bail!("No Image found for {name}"),
            (None, None) => bail!(
                "the image service at {}{IMAGES} lists no image; pass --image",
                self.base
            ),
        }
    }

    /// Polls a server until it leaves BUILD, with a spinner on stderr if shown.
    pub async fn wait_until_built(&self, id: &str, progress: Progress) -> anyhow::Result<Value> {
        let spinner = (progress == Progress::Shown).then(|| {
            let spinner = ProgressBar::new_spinner();
            spinner.set_message(format!("waiting for server {id} to build"));
            spinner
        });
        let server = loop {
            let server = self.get(&format!("/servers/{id}")).await?["server"].take();
            if server["status"] != "BUILD" {
                break server;
            }
            if let Some(spinner) = &spinner {
                spinner.tick();
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        };
        if let Some(spinner) = spinner {
            spinner.finish_and_clear();
        }
        Ok(server)
    }
}

/// `key=value`, URL-encoded.
fn query(key: &str, value: &str) -> String {
    url::form_urlencoded::Serializer::new(String::new())
        .append_pair(key, value)
        .finish()
}

/// `addresses` as `net=ip, ip; net2=ip` (the openstack CLI's style).
#[must_use]
pub fn format_addresses(addresses: &Value) -> String {
    addresses
        .as_object()
        .map(|nets| {
            nets.iter()
                .map(|(label, ips)| {
                    let ips: Vec<&str> = list_items(ips).filter_map(|ip| ip["addr"].as_str()).collect();
                    format!("{label}={}", ips.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; ")
        })
        .unwrap_or_default()
}

/// Prints rows as an aligned table with a header.
pub fn print_table(headers: &[&str], rows: &[Vec<String>]) {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<String>| {
        cells
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect::<Vec<_>>()
            .join("  ")
            .trim_end()
            .to_owned()
    };
    println!("{}", line(headers.iter().map(|h| (*h).to_owned()).collect()));
    println!("{}", line(widths.iter().map(|w| "-".repeat(*w)).collect()));
    for row in rows {
        println!("{}", line(row.clone()));
    }
}

pub fn print(output: Output, value: &Value, table: impl FnOnce(&Value)) {
    match output {
        Output::Json => println!("{}", serde_json::to_string_pretty(value).unwrap_or_default()),
        Output::Table => table(value),
    }
}

fn text(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// The items of a JSON list; none where `list` is not one (a missing key reads
/// as `null`).
pub fn list_items(list: &Value) -> impl Iterator<Item = &Value> {
    list.as_array().into_iter().flatten()
}

/// Prints the list `body[key]` as a table under `headers`, a `row` an item.
fn print_list(output: Output, body: &Value, key: &str, headers: &[&str], row: impl Fn(&Value) -> Vec<String>) {
    print(output, body, |v| {
        let rows: Vec<Vec<String>> = list_items(&v[key]).map(row).collect();
        print_table(headers, &rows);
    });
}

pub fn print_servers(output: Output, servers: &Value) {
    print_list(
        output,
        servers,
        "servers",
        &["ID", "Name", "Status", "Networks", "Host"],
        |s| {
            vec![
                text(&s["id"]),
                text(&s["name"]),
                text(&s["status"]),
                format_addresses(&s["addresses"]),
                text(&s["OS-EXT-SRV-ATTR:host"]),
            ]
        },
    );
}

pub fn print_server(output: Output, server: &Value) {
    print(output, server, |s| {
        let mut rows = vec![
            vec!["id".into(), text(&s["id"])],
            vec!["name".into(), text(&s["name"])],
            vec!["status".into(), text(&s["status"])],
            vec!["host".into(), text(&s["OS-EXT-SRV-ATTR:host"])],
            vec!["addresses".into(), format_addresses(&s["addresses"])],
            vec!["project".into(), text(&s["tenant_id"])],
            vec!["created".into(), text(&s["created"])],
        ];
        if let Some(fault) = s.get("fault") {
            rows.push(vec!["fault".into(), text(&fault["message"])]);
        }
        print_table(&["Field", "Value"], &rows);
    });
}

pub fn print_interfaces(output: Output, interfaces: &Value) {
    print_list(
        output,
        interfaces,
        "interfaceAttachments",
        &["Port ID", "Net ID", "IP addresses", "MAC address", "State"],
        |i| {
            let ips: Vec<String> = list_items(&i["fixed_ips"]).map(|f| text(&f["ip_address"])).collect();
            vec![
                text(&i["port_id"]),
                text(&i["net_id"]),
                ips.join(", "),
                text(&i["mac_addr"]),
                text(&i["port_state"]),
            ]
        },
    );
}

/// The body of `POST /servers` from CLI flags.
#[must_use]
pub fn create_body(
    name: &str,
    flavor: &str,
    image: &str,
    networks: &[String],
    ports: &[String],
    fixed_ip: Option<&str>,
) -> Value {
    let nets: Vec<Value> = if networks.is_empty() && ports.is_empty() {
        return json!({"server": {"name": name, "flavorRef": flavor, "imageRef": image, "networks": "auto"}});
    } else {
        networks
            .iter()
            .enumerate()
            .map(|(i, n)| match (i, fixed_ip) {
                (0, Some(ip)) => json!({"uuid": n, "fixed_ip": ip}),
                _ => json!({"uuid": n}),
            })
            .chain(ports.iter().map(|p| json!({"port": p})))
            .collect()
    };
    json!({"server": {"name": name, "flavorRef": flavor, "imageRef": image, "networks": nets}})
}
