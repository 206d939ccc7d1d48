-- Nova's accessIPv4 / accessIPv6 of a server (text, as the address's canonical
-- form; NULL when the user gave none, shown as "").
ALTER TABLE servers ADD COLUMN access_ip_v4 TEXT;
ALTER TABLE servers ADD COLUMN access_ip_v6 TEXT;
